package secretscan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// escapeAll spells s as JSON \u escapes, every character.
func escapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// TestStreamArgumentsSecondDecoding (hostile pass 10, H10-11): a streamed
// tool call whose arguments (JSON text) spell a token with \u escapes,
// in pieces of 1 to 7 bytes, reaches the client with the placeholder in
// its place, the arguments still JSON; arguments with escaped ordinary
// text come out as they went in.
func TestStreamArgumentsSecondDecoding(t *testing.T) {
	fw := &Firewall{rules: rules(t), names: NewPlaceholders(10, 100)}
	pat := secrettest.Corpus(6)[8].Value
	chunk := func(p string) string {
		return "data: " + mustMarshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0,
			"delta": map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": p}}}}}}}) + "\n\n"
	}
	args := func(d map[string]any) (string, bool) {
		tc, ok := d["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)["tool_calls"].([]any)
		if !ok {
			return "", false
		}
		s, ok := tc[0].(map[string]any)["function"].(map[string]any)["arguments"].(string)
		return s, ok
	}
	for _, tc := range []struct {
		name, args string
		secret     bool
	}{
		{"escaped token", `{"cmd": "export", "GITHUB_TOKEN":"` + escapeAll(pat) + `","n":1}`, true},
		{"escaped prose", `{"greeting":"` + escapeAll("héllo wörld, nothing to see") + `"}`, false},
	} {
		for _, size := range []int{1, 3, 5, 7} {
			sr := fw.NewStream(Redact, fw.names.For("s"))
			var out []byte
			for i := 0; i < len(tc.args); i += size {
				out = sr.Filter(out, []byte(chunk(tc.args[i:min(i+size, len(tc.args))])))
			}
			out = sr.Filter(out, []byte("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"))
			out = sr.Finish(out)
			got := streamText(t, out, args)
			var inner map[string]any
			if err := json.Unmarshal([]byte(got), &inner); err != nil {
				t.Fatalf("%s, %d-byte pieces: the arguments are no longer JSON: %q", tc.name, size, got)
			}
			flat := mustMarshal(inner)
			if !tc.secret {
				if got != tc.args || len(sr.Detections) != 0 {
					t.Fatalf("%s, %d-byte pieces: changed to %q (%v)", tc.name, size, got, sr.Detections)
				}
				continue
			}
			if strings.Contains(flat, pat) || !strings.Contains(flat, "[REDACTED:github-pat:") || len(sr.Detections) == 0 {
				t.Fatalf("%s, %d-byte pieces: the client got %q", tc.name, size, flat)
			}
		}
	}
}
