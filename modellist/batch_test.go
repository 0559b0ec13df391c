package modellist

import (
	"strings"
	"testing"
)

// TestBatchSetting: batch takes auto, gateway or provider; provider only
// where a provider has a batch API; anything else names the choices.
func TestBatchSetting(t *testing.T) {
	c, _ := mustParse(t, one("{model: anthropic/claude-x, api_key: k, api_base: 'https://proxy.example.com', batch: provider}"), nil)
	if d := c.Deployments[0]; d.Batch != BatchProvider {
		t.Fatalf("batch: %q", d.Batch)
	}
	c, _ = mustParse(t, one("{model: openai/gpt-x, api_key: k, batch: gateway}"), nil)
	if d := c.Deployments[0]; d.Batch != BatchGateway {
		t.Fatalf("batch: %q", d.Batch)
	}
	c, _ = mustParse(t, one("{model: openai/gpt-x, api_key: k, batch: auto}"), nil)
	if d := c.Deployments[0]; d.Batch != BatchAuto {
		t.Fatalf("batch: %q", d.Batch)
	}
	for src, want := range map[string]string{
		"{model: openai/gpt-x, api_key: k, batch: always}":                                       `proxy_params.batch: "always" is not a choice: auto`,
		"{model: ollama/llama3, api_base: 'http://localhost:11434', batch: provider}":            "proxy_params.batch: provider is for anthropic/ and openai/ entries",
		"{model: hosted_vllm/q, api_base: 'http://gpu:8000/v1', api_key: none, batch: provider}": "hosted_vllm/ batches are run by the gateway",
	} {
		_, _, err := Parse([]byte(one(src)), "models.yaml", func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "model_list[0]") {
			t.Errorf("%s: %v; want %q", src, err, want)
		}
	}
}
