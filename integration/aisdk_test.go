package integration

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
)

// aiSDKResult is what testdata/aisdk.mjs prints.
type aiSDKResult struct {
	Generate struct {
		Text         string `json:"text"`
		FinishReason string `json:"finishReason"`
		Usage        struct {
			InputTokens  int `json:"inputTokens"`
			OutputTokens int `json:"outputTokens"`
		} `json:"usage"`
	} `json:"generate"`
	Tool struct {
		Text  string `json:"text"`
		Steps int    `json:"steps"`
		Calls []struct {
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"calls"`
	} `json:"tool"`
	Stream struct {
		Text         string `json:"text"`
		FinishReason string `json:"finishReason"`
		Steps        int    `json:"steps"`
	} `json:"stream"`
}

// TestAISDKThroughGateway runs the Vercel AI SDK's default OpenAI provider
// (the Responses API, store left on, so its second step sends the first
// step's items back as item_reference) through the gateway to a chat
// backend and to Anthropic: generateText, and generateText and streamText
// with a tool the SDK executes.
func TestAISDKThroughGateway(t *testing.T) {
	runAISDK(t, "openai")
}

// TestAISDKBedrockThroughGateway runs the AI SDK's Amazon Bedrock provider
// (@ai-sdk/amazon-bedrock: Converse and ConverseStream, the gateway key as
// its Bedrock API key, its baseURL the gateway) through the gateway to a
// chat backend and to Anthropic, with the same steps as
// TestAISDKThroughGateway.
func TestAISDKBedrockThroughGateway(t *testing.T) {
	runAISDK(t, "bedrock")
}

// runAISDK runs testdata/aisdk.mjs with the AI SDK provider named.
func runAISDK(t *testing.T, provider string) {
	dir, node := testbin.AISDK(t)
	run := installScript(t, dir, "aisdk.mjs")
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	for _, alias := range []string{"oa", "claude"} {
		t.Run(alias, func(t *testing.T) {
			out := runNode(t, dir, node, run, "MODELGATE_BASE="+g.base, "MODELGATE_API_KEY="+aliceKey, "MODELGATE_MODEL="+alias, "MODELGATE_PROVIDER="+provider)
			var res aiSDKResult
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("script output: %v: %s", err, out)
			}
			if res.Generate.Text != fakes.DefaultReply || res.Generate.FinishReason != "stop" || res.Generate.Usage.InputTokens == 0 {
				t.Errorf("generateText: %+v", res.Generate)
			}
			if res.Tool.Steps != 2 || len(res.Tool.Calls) != 1 || res.Tool.Calls[0].Name != fakes.WeatherToolName ||
				!strings.Contains(string(res.Tool.Calls[0].Input), "Oslo") || res.Tool.Text != fakes.DefaultReply {
				t.Errorf("generateText with a tool: %+v", res.Tool)
			}
			if res.Stream.Steps != 2 || res.Stream.Text != fakes.DefaultReply || res.Stream.FinishReason != "stop" {
				t.Errorf("streamText with a tool: %+v", res.Stream)
			}
		})
	}
}
