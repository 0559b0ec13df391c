package secretscan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// sseFormats writes a text as each client format streams it, one delta
// per piece, with the events that open and close it.
var sseFormats = map[string]struct {
	open, close []string
	delta       func(piece string) string
	text        func(data map[string]any) (string, bool)
}{
	"chat": {
		delta: func(p string) string {
			return "data: " + mustMarshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": p}}}}) + "\n\n"
		},
		close: []string{"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", "data: [DONE]\n\n"},
		text: func(d map[string]any) (string, bool) {
			c, ok := d["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)["content"].(string)
			return c, ok
		},
	},
	"messages": {
		open: []string{"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"content\":[]}}\n\n",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"},
		delta: func(p string) string {
			return "event: content_block_delta\ndata: " + mustMarshal(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": p}}) + "\n\n"
		},
		close: []string{"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n", "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
		text: func(d map[string]any) (string, bool) {
			if d["type"] != "content_block_delta" {
				return "", false
			}
			return d["delta"].(map[string]any)["text"].(string), true
		},
	},
	"responses": {
		delta: func(p string) string {
			return "event: response.output_text.delta\ndata: " + mustMarshal(map[string]any{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": p}) + "\n\n"
		},
		text: func(d map[string]any) (string, bool) {
			s, ok := d["delta"].(string)
			return s, ok
		},
	},
	"gemini": {
		delta: func(p string) string {
			return "data: " + mustMarshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": p}}}}}}) + "\r\n\r\n"
		},
		text: func(d map[string]any) (string, bool) {
			s, ok := d["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"].(string)
			return s, ok
		},
	},
}

func mustMarshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// streamText reads the deltas' text back out of a redacted stream, and
// fails on an event whose data is not JSON.
func streamText(t *testing.T, out []byte, text func(map[string]any) (string, bool)) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range strings.Split(strings.ReplaceAll(string(out), "\r\n", "\n"), "\n\n") {
		for _, line := range strings.Split(ev, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var d map[string]any
			if err := json.Unmarshal([]byte(data), &d); err != nil {
				t.Fatalf("event data is not JSON: %q", data)
			}
			if s, ok := text(d); ok {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

// TestStreamRedactsAcrossChunks: an answer that writes credentials of
// every kind, streamed in pieces of 1 to 7 bytes, reaches the client with
// none of them, in every format, and with every other word intact.
func TestStreamRedactsAcrossChunks(t *testing.T) {
	fw := &Firewall{rules: rules(t), names: NewPlaceholders(10, 100)}
	creds := secrettest.Corpus(9)
	var answer strings.Builder
	for i, c := range creds {
		fmt.Fprintf(&answer, "Step %d: here it is:\n%s\nand that is all. ", i, c.Text)
	}
	for name, f := range sseFormats {
		for _, size := range []int{1, 3, 7} {
			sr := fw.NewStream(Redact, fw.names.For("s"))
			var out []byte
			for _, e := range f.open {
				out = sr.Filter(out, []byte(e))
			}
			text := answer.String()
			for i := 0; i < len(text); i += size {
				out = sr.Filter(out, []byte(f.delta(text[i:min(i+size, len(text))])))
			}
			for _, e := range f.close {
				out = sr.Filter(out, []byte(e))
			}
			out = sr.Finish(out)
			got := streamText(t, out, f.text)
			if k := secrettest.Leaked(got, creds); k != "" {
				t.Fatalf("%s, %d-byte deltas: %s reached the client", name, size, k)
			}
			if k := secrettest.Leaked(string(out), creds); k != "" {
				t.Fatalf("%s, %d-byte deltas: %s is in the stream's bytes", name, size, k)
			}
			for i := range creds {
				if !strings.Contains(got, fmt.Sprintf("Step %d: here it is:\n", i)) {
					t.Fatalf("%s, %d-byte deltas: the text around the secrets was lost: %q", name, size, got)
				}
			}
			if len(sr.Detections) < len(creds) {
				t.Fatalf("%s: %d detections for %d credentials", name, len(sr.Detections), len(creds))
			}
		}
	}
}

// TestStreamPassesOrdinaryTextThrough: text with no secret comes out the
// same, delayed by at most a word.
func TestStreamPassesOrdinaryTextThrough(t *testing.T) {
	fw := &Firewall{rules: rules(t), names: NewPlaceholders(10, 100)}
	f := sseFormats["messages"]
	sr := fw.NewStream(Redact, fw.names.For("s"))
	text := "Here is the plan: read the config, then restart the service.\nDone."
	var out []byte
	for _, e := range f.open {
		out = sr.Filter(out, []byte(e))
	}
	for _, w := range strings.SplitAfter(text, " ") {
		out = sr.Filter(out, []byte(f.delta(w)))
	}
	for _, e := range f.close {
		out = sr.Filter(out, []byte(e))
	}
	out = sr.Finish(out)
	if got := streamText(t, out, f.text); got != text {
		t.Fatalf("got %q", got)
	}
	if !bytes.HasSuffix(out, []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")) {
		t.Fatalf("the stream's end moved: %q", out)
	}
}
