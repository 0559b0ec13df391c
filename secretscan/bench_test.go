package secretscan

import (
	"encoding/json"
	"testing"

	"github.com/modelgate/modelgate/secretscan/secrettest"
)

func toolResultBody(tb testing.TB, text string) []byte {
	body, err := json.Marshal(map[string]any{
		"model":      "m",
		"max_tokens": 1024,
		"messages": []any{
			map[string]any{"role": "user", "content": "read the file"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": map[string]any{"path": "x.go"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": text}}},
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

func benchBody(b *testing.B, size int) {
	rs := rules(b)
	body := toolResultBody(b, secrettest.GoSource(b, size))
	names := NewPlaceholders(10, 10).For("bench")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := rs.RedactBody(body, names); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedactBody100KB is a Messages request whose tool result is a
// 100 KB source file; BenchmarkRedactBody1MB a 1 MB prompt.
func BenchmarkRedactBody100KB(b *testing.B) { benchBody(b, 100<<10) }
func BenchmarkRedactBody1MB(b *testing.B)   { benchBody(b, 1<<20) }

// BenchmarkRedactBodySmall is an ordinary agent turn: a few short texts.
func BenchmarkRedactBodySmall(b *testing.B) {
	rs := rules(b)
	body := toolResultBody(b, "package main\n\nfunc main() { println(\"hello\") }\n")
	names := NewPlaceholders(10, 10).For("bench")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := rs.RedactBody(body, names); err != nil {
			b.Fatal(err)
		}
	}
}
