package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	script, err := os.ReadFile(filepath.Join("testdata", "node_sdks.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "modelgate-node-sdks-test.mjs")
	if err := os.WriteFile(run, script, 0o600); err != nil {
		t.Fatal(err)
	}
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	for _, sdk := range []string{"openai", "anthropic", "genai"} {
		t.Run(sdk, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, run)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "MODELGATE_SDK=" + sdk,
				"MODELGATE_BASE=" + g.base, "MODELGATE_API_KEY=" + aliceKey, "MODELGATE_MODEL=oa"}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("node: %v\n%s\n%s", err, stdout.String(), stderr.String())
			}
			var res struct{ Text, ToolCall, Final string }
			if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil {
				t.Fatalf("script output: %v: %s", err, stdout.String())
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
