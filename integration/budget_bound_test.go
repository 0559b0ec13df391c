package integration

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestBudgetedRequestsAreSentAnOutputBound: a request under a budget that
// sets no output bound is sent the one its estimate assumed (here the
// model's max_output_tokens), passed through to a Gemini upstream or
// translated from Responses, and the answer names it; a request without
// a budget goes as its client wrote it.
func TestBudgetedRequestsAreSentAnOutputBound(t *testing.T) {
	rec := &fakes.Recorder{}
	up := httptest.NewServer(fakes.Gemini(fakes.Options{}, rec))
	t.Cleanup(up.Close)
	g := startGateway(t, gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: gem
    proxy_params:
      model: gemini/gemini-3-fake
      api_base: %s
      api_key: %s
    model_info:
      input_cost_per_token: 0.000001
      output_cost_per_token: 0.000004
      max_output_tokens: 2000
`, up.URL, fakes.GeminiAPIKey)})
	capped := createKey(t, g, `{"name":"capped","budget":{"amount":"5","period":"daily"}}`)

	requests := []struct{ name, path, body string }{
		{"gemini", "/v1beta/models/gem:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
		{"responses", "/v1/responses", `{"model":"gem","input":"hi","store":false}`},
		// hostile2 D1: Converse's bound was never added (nor lowered).
		{"converse", "/model/gem/converse", `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`},
	}
	for _, tc := range requests {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := g.do(t, "POST", tc.path, capped.Value, tc.body)
			if status != 200 || h.Get("X-Modelgate-Max-Tokens-Added") != "2000" || h.Get("X-Modelgate-Max-Tokens-Lowered") != "" {
				t.Fatalf("%d added %q lowered %q: %s", status, h.Get("X-Modelgate-Max-Tokens-Added"), h.Get("X-Modelgate-Max-Tokens-Lowered"), body)
			}
			if sent := string(rec.Last().Body); !strings.Contains(sent, `"maxOutputTokens":2000`) {
				t.Errorf("upstream was sent %s; want maxOutputTokens 2000", sent)
			}
		})
	}
	// A bound past the budget is lowered, and the upstream is sent the
	// lowered one: Converse's inferenceConfig.maxTokens (hostile2 D1) and
	// Gemini's under its proto field name, passed through (D3).
	for _, tc := range []struct{ name, path, body, member string }{
		{"converse lowered", "/model/gem/converse", `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":100000000}}`, `"maxOutputTokens":`},
		{"gemini snake_case lowered", "/v1beta/models/gem:generateContent",
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generation_config":{"max_output_tokens":100000000}}`, `"max_output_tokens":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := g.do(t, "POST", tc.path, capped.Value, tc.body)
			lowered := h.Get("X-Modelgate-Max-Tokens-Lowered")
			if status != 200 || lowered == "" {
				t.Fatalf("%d lowered %q: %s", status, lowered, body)
			}
			if sent := string(rec.Last().Body); !strings.Contains(sent, tc.member+lowered) || strings.Contains(sent, "100000000") {
				t.Errorf("upstream was sent %s; want %s%s", sent, tc.member, lowered)
			}
		})
	}
	t.Run("no budget", func(t *testing.T) {
		status, h, body := g.do(t, "POST", requests[0].path, aliceKey, requests[0].body)
		if status != 200 || h.Get("X-Modelgate-Max-Tokens-Added") != "" {
			t.Fatalf("%d added %q: %s", status, h.Get("X-Modelgate-Max-Tokens-Added"), body)
		}
		if sent := string(rec.Last().Body); strings.Contains(sent, "maxOutputTokens") {
			t.Errorf("upstream was sent %s; want the client's body", sent)
		}
	})
}
