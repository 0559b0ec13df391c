package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
)

// answeredModel is the model each fake upstream names in its answers.
var answeredModel = map[string]string{"oa": "fake-gpt", "claude": "claude-fake", "llama": "llama-fake", "echo": "echo"}

// TestAnswersNameTheModel: whatever the client's format, whole or
// streamed, an answer names the model the upstream says answered (as
// OpenAI answers a request for gpt-4o with its dated snapshot), the same
// name in chat, Messages, Responses and Gemini answers; the ledger keeps
// the alias beside it.
func TestAnswersNameTheModel(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	// name reads the model out of an answer, or out of every data line of
	// a stream (all must agree).
	name := func(t *testing.T, body []byte, field func(map[string]any) string) string {
		t.Helper()
		var got []string
		for _, line := range strings.Split(string(body), "\n") {
			line = strings.TrimPrefix(line, "data: ")
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				continue
			}
			if v := field(m); v != "" {
				got = append(got, v)
			}
		}
		if len(got) == 0 {
			t.Fatalf("no model named in %s", body)
		}
		for _, v := range got[1:] {
			if v != got[0] {
				t.Fatalf("the answer names %q and %q: %s", got[0], v, body)
			}
		}
		return got[0]
	}
	str := func(v any) string { s, _ := v.(string); return s }
	obj := func(v any) map[string]any { m, _ := v.(map[string]any); return m }
	formats := []struct {
		name  string
		send  func(alias string, stream bool) (int, []byte)
		field func(map[string]any) string
	}{
		{"chat", func(alias string, stream bool) (int, []byte) {
			st, _, b := g.do(t, "POST", "/v1/chat/completions", aliceKey, fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, alias, stream))
			return st, b
		}, func(m map[string]any) string { return str(m["model"]) }},
		{"messages", func(alias string, stream bool) (int, []byte) {
			st, _, b := g.do(t, "POST", "/v1/messages", aliceKey, fmt.Sprintf(`{"model":%q,"max_tokens":32,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, alias, stream), "anthropic-version", "2023-06-01")
			return st, b
		}, func(m map[string]any) string { return str(m["model"]) + str(obj(m["message"])["model"]) }},
		{"responses", func(alias string, stream bool) (int, []byte) {
			st, _, b := g.do(t, "POST", "/v1/responses", aliceKey, fmt.Sprintf(`{"model":%q,"stream":%v,"store":false,"input":"hi"}`, alias, stream))
			return st, b
		}, func(m map[string]any) string { return str(m["model"]) + str(obj(m["response"])["model"]) }},
		{"gemini", func(alias string, stream bool) (int, []byte) {
			path := "/v1beta/models/" + alias + ":generateContent"
			if stream {
				path = "/v1beta/models/" + alias + ":streamGenerateContent?alt=sse"
			}
			st, _, b := g.do(t, "POST", path, aliceKey, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
			return st, b
		}, func(m map[string]any) string { return str(m["modelVersion"]) }},
	}
	for _, alias := range []string{"oa", "claude", "llama"} {
		for _, f := range formats {
			for _, stream := range []bool{false, true} {
				st, body := f.send(alias, stream)
				if st != 200 {
					t.Fatalf("%s %s stream=%v: %d %s", alias, f.name, stream, st, body)
				}
				if got := name(t, body, f.field); got != answeredModel[alias] {
					t.Errorf("%s %s stream=%v names %q, want %q, the model that answered", alias, f.name, stream, got, answeredModel[alias])
				}
			}
		}
	}
	for _, r := range g.ledgerRecords(t) {
		if r.Alias == "" || r.UpstreamModel == "" {
			t.Errorf("record without alias or upstream model: %+v", r)
		}
	}
}
