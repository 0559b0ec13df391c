package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/ledger"
)

// TestBedrockConverseThroughGateway drives the gateway with the AWS SDK's
// own Converse and ConverseStream (@aws-sdk/client-bedrock-runtime, its
// endpoint the gateway's URL, testdata/bedrock_converse.mjs) on a chat
// completions upstream, an Anthropic upstream and Ollama: text, a tool
// call whole and streamed, the tool result's answer streamed, bearer and
// SigV4 authentication, and a missing model's error as the SDK raises it;
// then LangChain's ChatBedrockConverse on the same client (text, a tool
// call, the answer to its result streamed). The ledger names every call
// bedrock_converse.
func TestBedrockConverseThroughGateway(t *testing.T) {
	dir, node := testbin.NodeSDKs(t)
	run := installScript(t, dir, "bedrock_converse.mjs")
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	aliases := []string{"oa", "claude", "llama"}
	for _, alias := range aliases {
		t.Run(alias, func(t *testing.T) {
			out := runNode(t, dir, node, run, "MODELGATE_BASE="+g.base, "MODELGATE_API_KEY="+aliceKey, "MODELGATE_MODEL="+alias)
			var res struct {
				Text, StopReason, ToolCall, ToolStop, StreamToolCall, StreamToolStop, Final, SigV4Text, Missing string
				LCText, LCToolCall, LCFinal                                                                     string
				CountTokens                                                                                     int
				Events                                                                                          []string
				Usage, StreamUsage                                                                              struct{ InputTokens, OutputTokens, TotalTokens int64 }
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("script output: %v: %s", err, out)
			}
			if res.Text != fakes.DefaultReply || res.StopReason != "end_turn" || res.SigV4Text != fakes.DefaultReply {
				t.Errorf("text turn: %q (%s), signed: %q", res.Text, res.StopReason, res.SigV4Text)
			}
			if res.Usage.OutputTokens == 0 || res.Usage.TotalTokens < res.Usage.InputTokens+res.Usage.OutputTokens {
				t.Errorf("usage %+v", res.Usage)
			}
			for _, c := range []string{res.ToolCall, res.StreamToolCall} {
				if !strings.HasPrefix(c, fakes.WeatherToolName+" {") || !strings.Contains(c, "Oslo") {
					t.Errorf("tool call: %q", c)
				}
			}
			if res.ToolStop != "tool_use" || res.StreamToolStop != "tool_use" {
				t.Errorf("tool turn stop reasons %q, %q", res.ToolStop, res.StreamToolStop)
			}
			if res.Final != fakes.DefaultReply {
				t.Errorf("answer after the tool result: %q", res.Final)
			}
			if got := strings.Join(res.Events, " "); got != "messageStart contentBlockDelta contentBlockStop messageStop metadata" {
				t.Errorf("stream events: %s", got)
			}
			if res.StreamUsage.OutputTokens == 0 {
				t.Errorf("stream usage %+v", res.StreamUsage)
			}
			if res.CountTokens < 1 {
				t.Errorf("CountTokens: %d", res.CountTokens)
			}
			if res.Missing != "ResourceNotFoundException 404" {
				t.Errorf("missing model: %q", res.Missing)
			}
			if res.LCText != fakes.DefaultReply || res.LCFinal != fakes.DefaultReply ||
				!strings.HasPrefix(res.LCToolCall, fakes.WeatherToolName+" {") || !strings.Contains(res.LCToolCall, "Oslo") {
				t.Errorf("LangChain: text %q, tool call %q, final %q", res.LCText, res.LCToolCall, res.LCFinal)
			}
		})
	}
	// The echo backend, by hand: the request's text comes back.
	status, _, body := g.do(t, http.MethodPost, "/model/echo/converse", aliceKey, `{"messages":[{"role":"user","content":[{"text":"ping"}]}]}`)
	if status != http.StatusOK || !strings.Contains(string(body), `"stopReason":"end_turn"`) || !strings.Contains(string(body), "ping") {
		t.Errorf("echo: %d %s", status, body)
	}
	// A key refused in Bedrock's shape, which the SDK reads.
	status, h, body := g.do(t, http.MethodPost, "/model/oa/converse", "sk-wrong", `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`)
	if status != http.StatusUnauthorized || h.Get("X-Amzn-Errortype") == "" || !strings.HasPrefix(string(body), `{"message":`) {
		t.Errorf("bad key: %d %v %s", status, h, body)
	}
	n := map[string]int{}
	for _, r := range g.ledgerRecords(t) {
		if r.Endpoint == ledger.EndpointBedrockConverse && r.Outcome == ledger.OutcomeOK {
			n[r.Alias]++
		}
	}
	for _, alias := range aliases {
		if n[alias] != 8 {
			t.Errorf("%s: %d bedrock_converse records, want 8 (5 from the AWS SDK, 3 from LangChain)", alias, n[alias])
		}
	}
	if n["echo"] != 1 {
		t.Errorf("echo: %d bedrock_converse records, want 1", n["echo"])
	}
}
