package integration

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
)

// TestNodeSDKsThroughGateway runs the official Node SDKs (openai,
// @anthropic-ai/sdk, @google/genai) through the gateway, each with the base
// URL docs/clients.md gives it, to a chat-completions-only backend: a text turn,
// and a tool loop where the SDK's caller answers the backend's tool call
// (testdata/node_sdks.mjs).
func TestNodeSDKsThroughGateway(t *testing.T) {
	dir, node := testbin.NodeSDKs(t)
	run := installScript(t, dir, "node_sdks.mjs")
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	for _, sdk := range []string{"openai", "anthropic", "genai"} {
		t.Run(sdk, func(t *testing.T) {
			out := runNode(t, dir, node, run, "MODELGATE_SDK="+sdk, "MODELGATE_BASE="+g.base, "MODELGATE_API_KEY="+aliceKey, "MODELGATE_MODEL=oa")
			var res struct{ Text, ToolCall, Final string }
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("script output: %v: %s", err, out)
			}
			if res.Text != fakes.DefaultReply {
				t.Errorf("text turn: %q", res.Text)
			}
			if !strings.HasPrefix(res.ToolCall, fakes.WeatherToolName+" ") || !strings.Contains(res.ToolCall, "Oslo") {
				t.Errorf("tool call: %q", res.ToolCall)
			}
			if res.Final != fakes.DefaultReply {
				t.Errorf("answer after the tool result: %q", res.Final)
			}
		})
	}
}
