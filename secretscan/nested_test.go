package secretscan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// TestSecretEscapedInsideJSONText (hostile pass 10, H10-11): a token
// spelled with \u escapes inside a string whose text is JSON (tool call
// arguments, a JSON tool result, a Responses function_call_output) is
// found and replaced where it is written, the inner JSON staying valid;
// a token plain beside it is replaced once.
func TestSecretEscapedInsideJSONText(t *testing.T) {
	fw, err := New(10, 10)
	if err != nil {
		t.Fatal(err)
	}
	pat := secrettest.Corpus(6)[8].Value
	var esc strings.Builder
	for _, c := range pat {
		fmt.Fprintf(&esc, `\u%04x`, c)
	}
	e := esc.String()
	bodies := map[string]any{
		"chat arguments": map[string]any{"model": "m", "messages": []any{map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
			"function": map[string]any{"name": "f", "arguments": `{"t":"` + e + `"}`}}}}}},
		"chat tool result": map[string]any{"model": "m", "messages": []any{map[string]any{"role": "tool", "tool_call_id": "c1", "content": `{"env":{"GITHUB_TOKEN":"` + e + `"}}`}}},
		"responses output": map[string]any{"model": "m", "input": []any{map[string]any{"type": "function_call_output", "call_id": "c1", "output": `{"GITHUB_TOKEN":"` + e + `","also":"` + pat + `"}`}}},
	}
	for name, b := range bodies {
		body, _ := json.Marshal(b)
		v, err := fw.Screen(Redact, body, fw.Names("n"))
		if err != nil || len(v.Detections) == 0 || v.Detections[0].Rule != "github-pat" {
			t.Fatalf("%s: %+v %v", name, v.Detections, err)
		}
		var inner string
		out := string(v.Body)
		if strings.Contains(out, e[:30]) || strings.Contains(out, pat) || !strings.Contains(out, "[REDACTED:github-pat:") {
			t.Fatalf("%s: %s", name, out)
		}
		// The text that was JSON still is.
		var decoded any
		_ = json.Unmarshal(v.Body, &decoded)
		if inner = jsonText(decoded); !json.Valid([]byte(inner)) || !strings.Contains(inner, "[REDACTED:github-pat:") {
			t.Fatalf("%s: inner text %q", name, inner)
		}
		if name == "responses output" && len(v.Detections) != 2 {
			t.Fatalf("%s: the plain and the escaped token: %+v", name, v.Detections)
		}
	}
	// A text that only mentions \u is left as it is.
	plain := []byte(`{"messages":[{"role":"user","content":"in JSON, \\u0041 is A"}]}`)
	if v, err := fw.Screen(Redact, plain, fw.Names("n")); err != nil || len(v.Detections) != 0 || string(v.Body) != string(plain) {
		t.Fatalf("plain: %s %+v %v", v.Body, v.Detections, err)
	}
}

// jsonText is the first string in v that starts with "{".
func jsonText(v any) string {
	switch x := v.(type) {
	case string:
		if strings.HasPrefix(x, "{") {
			return x
		}
	case []any:
		for _, e := range x {
			if s := jsonText(e); s != "" {
				return s
			}
		}
	case map[string]any:
		for _, e := range x {
			if s := jsonText(e); s != "" {
				return s
			}
		}
	}
	return ""
}

// FuzzDecodeNested: every decoded byte names a non-empty span of the
// text, in order, and nothing panics.
func FuzzDecodeNested(f *testing.F) {
	f.Add(`{"t":"\u0067\u0068\u0070_x"}`)
	f.Add(`\u00e9\ud83d\ude00\u12\\u0041\"\n`)
	f.Add(`no escape`)
	f.Fuzz(func(t *testing.T, text string) {
		var n nested
		if !decodeNested(text, &n) {
			return
		}
		if len(n.from) != len(n.out) || len(n.to) != len(n.out) {
			t.Fatalf("spans %d %d for %d bytes", len(n.from), len(n.to), len(n.out))
		}
		prev := 0
		for i := range n.out {
			if int(n.from[i]) < prev || n.from[i] >= n.to[i] || int(n.to[i]) > len(text) {
				t.Fatalf("byte %d: span [%d,%d) after %d of %q", i, n.from[i], n.to[i], prev, text)
			}
			prev = int(n.from[i])
		}
	})
}
