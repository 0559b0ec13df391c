package handlers

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/providers"
)

var formats = []providers.Format{providers.FormatOpenAI, providers.FormatAnthropic, providers.FormatOllama}

// FuzzTranslateBody feeds arbitrary upstream answers through every
// response translation the gateway uses: an upstream is not trusted to
// send what its API promises, and a bad answer must become an error, never
// a panic or invalid JSON for the client. Corpus: testdata/fuzz/FuzzTranslateBody.
func FuzzTranslateBody(f *testing.F) {
	f.Add(uint8(0), uint8(1), []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`))
	f.Add(uint8(1), uint8(0), []byte(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`))
	f.Add(uint8(0), uint8(2), []byte(`{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"hi"},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":2}`))
	f.Fuzz(func(t *testing.T, c, u uint8, raw []byte) {
		clients := [...]providers.Format{providers.FormatOpenAI, providers.FormatAnthropic, providers.FormatResponses}
		cf := clients[int(c)%3]
		up := formats[int(u)%3]
		rt, err := providers.NewRoute(cf, up)
		if err != nil {
			t.Fatal(err)
		}
		var info providers.RequestInfo
		if cf == providers.FormatResponses {
			if info.Turn, err = providers.ParseResponsesRequest([]byte(`{"model":"m","input":"hi","tools":[{"type":"custom","name":"apply_patch"}]}`)); err != nil {
				t.Fatal(err)
			}
		}
		out, usage, err := rt.Response(raw, info)
		if err != nil {
			return
		}
		if cf != up && !json.Valid(out) {
			t.Fatalf("%s→%s produced invalid JSON: %q", up, cf, out)
		}
		if usage.InputTokens < 0 || usage.OutputTokens < 0 {
			t.Fatalf("negative usage %+v", usage)
		}
	})
}

// FuzzServeChat sends arbitrary bodies to both chat endpoints of a gateway
// whose deployment is the built-in echo backend: the answer is always a
// well-formed response with a status the contract names, never a panic.
// Corpus: testdata/fuzz/FuzzServeChat.
func FuzzServeChat(f *testing.F) {
	f.Add(false, []byte(`{"model":"e","messages":[{"role":"user","content":"hi"}]}`))
	f.Add(true, []byte(`{"model":"e","max_tokens":5,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`))
	f.Add(false, []byte(`{"model":"e","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`))
	g, _ := testGateway(f, "model_list:\n  - model_name: e\n    proxy_params:\n      model: echo/e\n", nil)
	f.Fuzz(func(t *testing.T, anthropic bool, body []byte) {
		path := "/v1/chat/completions"
		if anthropic {
			path = "/v1/messages"
		}
		rec := post(g, alice, path, string(body))
		switch rec.Code {
		case http.StatusOK:
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") && !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("200 with invalid JSON: %q", rec.Body)
			}
		case http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge:
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%d with invalid JSON: %q", rec.Code, rec.Body)
			}
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}

// FuzzTooDeep checks the bracket scan against encoding/json: when the scan
// passes a valid document, its real depth is within the limit, and when
// it refuses one, the real depth is beyond it.
func FuzzTooDeep(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"[[[\"]]"}]}`), uint8(2))
	f.Add([]byte(`[[["x\\"]]]`), uint8(2))
	f.Fuzz(func(t *testing.T, body []byte, max uint8) {
		if !json.Valid(body) {
			_ = tooDeep(body, int(max))
			return
		}
		if got, want := tooDeep(body, int(max)), realDepth(body) > int(max); got != want {
			t.Fatalf("tooDeep(%q, %d) = %v, real depth %d", body, max, got, realDepth(body))
		}
	})
}

// realDepth measures nesting with the json tokenizer.
func realDepth(body []byte) int {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	depth, most := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return most
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
				most = max(most, depth)
			} else {
				depth--
			}
		}
	}
}
