package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// withFirewall turns the secret firewall on, redacting, for every alias.
func withFirewall(tb testing.TB) func(*GatewayOptions) {
	fw, err := testFirewall()
	if err != nil {
		tb.Fatal(err)
	}
	return func(o *GatewayOptions) {
		o.Secrets = fw
		o.SecretsFor = func(string, *modellist.Deployment) modellist.SecretsAction { return modellist.SecretsRedact }
	}
}

// BenchmarkSecretsServe is one whole request with the firewall off and on
// (redact): an ordinary 2 KB chat turn, a Messages turn whose tool result
// is a 100 KB source file, and a 1 MB prompt. It reports the p99 of the
// request's time, where the firewall's cost shows.
func BenchmarkSecretsServe(b *testing.B) {
	id := &policy.Identity{KeyID: "bench", Role: policy.RoleUser}
	toolResult := func(text string) []byte {
		body, _ := json.Marshal(map[string]any{"model": "claude", "max_tokens": 256, "messages": []any{
			map[string]any{"role": "user", "content": "read it"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": map[string]any{"file_path": "x.go"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": text}}},
		}})
		return body
	}
	prompt := func(text string) []byte {
		body, _ := json.Marshal(map[string]any{"model": "oa", "messages": []any{map[string]any{"role": "user", "content": text}}})
		return body
	}
	cases := []struct {
		name, path string
		body       []byte
	}{
		{"chat-2KB", "/v1/chat/completions", chatRequest("oa", false)},
		{"chat-2KB-stream", "/v1/chat/completions", chatRequest("oa", true)},
		{"messages-tool-result-100KB", "/v1/messages", toolResult(secrettest.GoSource(b, 100<<10))},
		{"chat-prompt-1MB", "/v1/chat/completions", prompt(secrettest.GoSource(b, 1<<20))},
	}
	for _, tc := range cases {
		for _, on := range []bool{false, true} {
			name := tc.name + "/off"
			var edit []func(*GatewayOptions)
			if on {
				name = tc.name + "/on"
				edit = append(edit, withFirewall(b))
			}
			b.Run(name, func(b *testing.B) {
				g := benchGateway(b, &countingRecorder{}, edit...)
				ctx := policy.WithIdentity(context.Background(), id)
				serve := func() *httptest.ResponseRecorder {
					r := httptest.NewRequestWithContext(ctx, http.MethodPost, tc.path, bytes.NewReader(tc.body))
					r.Header.Set("Anthropic-Version", "2023-06-01")
					w := httptest.NewRecorder()
					g.ServeHTTP(w, r)
					return w
				}
				if w := serve(); w.Code != http.StatusOK {
					b.Fatalf("status %d, body %q", w.Code, w.Body)
				}
				var took []time.Duration
				b.SetBytes(int64(len(tc.body)))
				b.ReportAllocs()
				for b.Loop() {
					start := time.Now()
					serve()
					took = append(took, time.Since(start))
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
			})
		}
	}
}
