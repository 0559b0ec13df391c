package providers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"
)

// FuzzOpenAIToOllamaRequest checks that any body either translates into
// valid JSON with an explicit stream flag or is refused as a 400.
// Seeds: testdata/fuzz/FuzzOpenAIToOllamaRequest.
func FuzzOpenAIToOllamaRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := OpenAIToOllamaRequest(body, "llama3.1")
		if err != nil {
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
				t.Fatalf("error %T %v is not a 400 APIError", err, err)
			}
			return
		}
		var req struct {
			Model    string          `json:"model"`
			Stream   *bool           `json:"stream"`
			Messages []OllamaMessage `json:"messages"`
		}
		if err := json.Unmarshal(out, &req); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out)
		}
		if req.Model != "llama3.1" || req.Stream == nil || len(req.Messages) == 0 {
			t.Fatalf("output lacks model, stream or messages: %s", out)
		}
	})
}

// FuzzOllamaStream feeds arbitrary NDJSON through the stream translator:
// it must never panic, and whatever it wrote must be SSE whose data are
// JSON objects or [DONE]. Seeds are the fixtures in testdata/ollama.
func FuzzOllamaStream(f *testing.F) {
	for _, name := range []string{"stream_tools.ndjson", "stream_error.ndjson", "chat_tools.json"} {
		b, err := os.ReadFile("testdata/ollama/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, true)
	}
	f.Add([]byte("{\"message\":{\"content\":\"\\u2028\\ud800\xff\"},\"done\":true}\n"), false)
	f.Fuzz(func(t *testing.T, nd []byte, includeUsage bool) {
		out, _, err := runOllamaStream(t, nd, includeUsage)
		if err != nil && !errors.Is(err, ErrEventTooLarge) {
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway {
				t.Fatalf("error %T %v", err, err)
			}
		}
		r := NewSSEReader(bytes.NewReader(out), bufio.NewReader(nil))
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(ev.Data) != "[DONE]" && !json.Valid(ev.Data) {
				t.Fatalf("invalid chunk %q", ev.Data)
			}
		}
	})
}
