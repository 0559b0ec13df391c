package secretscan

import (
	"strings"
	"testing"
)

// BenchmarkStreamChat is the redactor on an ordinary streamed chat answer
// of about 2 KB in 5-byte deltas: text, then a tool call's arguments.
func BenchmarkStreamChat(b *testing.B) {
	fw := &Firewall{rules: rules(b), names: NewPlaceholders(10, 100)}
	f := sseFormats["chat"]
	text := strings.Repeat("Add the new key next to the old one, reload, move clients over. ", 24)
	var events [][]byte
	for i := 0; i < len(text); i += 5 {
		events = append(events, []byte(f.delta(text[i:min(i+5, len(text))])))
	}
	args := `{"path":"internal/config/loader.go","old":"return nil, err","new":"return nil, fmt.Errorf(\"loading %s: %w\", path, err)"}`
	for i := 0; i < len(args); i += 5 {
		events = append(events, []byte("data: "+mustMarshal(map[string]any{"choices": []any{map[string]any{"index": 0,
			"delta": map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": args[i:min(i+5, len(args))]}}}}}}})+"\n\n"))
	}
	size := 0
	for _, e := range events {
		size += len(e)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var out []byte
	for b.Loop() {
		sr := fw.NewStream(Redact, fw.names.For("s"))
		out = out[:0]
		for _, e := range events {
			out = sr.Filter(out, e)
		}
		out = sr.Finish(out)
		if len(sr.Detections) != 0 {
			b.Fatal(sr.Detections)
		}
	}
}
