package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/secretscan"
	"github.com/modelgate/modelgate/secretscan/secrettest"
)

var testFirewall = sync.OnceValues(func() (*secretscan.Firewall, error) {
	return secretscan.New(secretscan.DefaultSessions, secretscan.DefaultSecretsPerScope)
})

// secretsSetup is a gateway with the firewall in front of an OpenAI, an
// Anthropic and a Gemini fake, each entry with the given action.
type secretsSetup struct {
	g                 *Gateway
	openai, anth, gem *fakes.Recorder
	mu                sync.Mutex
	events            []secretscan.Event
}

func newSecretsSetup(t *testing.T, action string, o fakes.Options) *secretsSetup {
	t.Helper()
	fw, err := testFirewall()
	if err != nil {
		t.Fatal(err)
	}
	s := &secretsSetup{openai: &fakes.Recorder{}, anth: &fakes.Recorder{}, gem: &fakes.Recorder{}}
	oa := httptest.NewServer(fakes.OpenAI(o, s.openai))
	an := httptest.NewServer(fakes.Anthropic(o, s.anth))
	ge := httptest.NewServer(fakes.Gemini(o, s.gem))
	t.Cleanup(oa.Close)
	t.Cleanup(an.Close)
	t.Cleanup(ge.Close)
	sec := ""
	if action != "" {
		sec = "    secrets: {action: " + action + "}\n"
	}
	yaml := "model_list:\n" +
		kindEntry("oa", "openai/m", oa.URL) + sec +
		kindEntry("an", "anthropic/claude-sonnet-4-5", an.URL) + sec +
		kindEntry("ge", "gemini/gemini-2.5-flash", ge.URL, "api_key: "+fakes.GeminiAPIKey) + sec
	yaml = strings.Replace(yaml, "      api_key: sk-upstream-secret\n      api_key: "+fakes.GeminiAPIKey, "      api_key: "+fakes.GeminiAPIKey, 1)
	s.g, _ = testGateway(t, yaml, func(o *GatewayOptions) {
		o.Secrets = fw
		o.SecretEvents = func(e secretscan.Event) {
			s.mu.Lock()
			s.events = append(s.events, e)
			s.mu.Unlock()
		}
	})
	return s
}

func (s *secretsSetup) Events() []secretscan.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]secretscan.Event(nil), s.events...)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// secretRequests builds, for each client format, a request whose prompt,
// system text and tool results carry the corpus's credentials.
func secretRequests(t *testing.T, alias string, creds []secrettest.Credential) map[string]string {
	half := len(creds) / 2
	var prompt, tool []string
	for i, c := range creds {
		if i < half {
			prompt = append(prompt, c.Text)
		} else {
			tool = append(tool, c.Text)
		}
	}
	p, tr := strings.Join(prompt, "\n"), strings.Join(tool, "\n")
	return map[string]string{
		"/v1/chat/completions": mustJSON(t, map[string]any{"model": alias, "messages": []any{
			map[string]any{"role": "system", "content": "keys: " + creds[0].Text},
			map[string]any{"role": "user", "content": p},
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "read", "arguments": `{"path":".env"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": tr},
		}}),
		"/v1/messages": mustJSON(t, map[string]any{"model": alias, "max_tokens": 64, "system": "keys: " + creds[0].Text, "messages": []any{
			map[string]any{"role": "user", "content": p},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": map[string]any{"file_path": ".env"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "text", "text": tr}}}}},
		}}),
		"/v1/responses": mustJSON(t, map[string]any{"model": alias, "store": false, "instructions": "keys: " + creds[0].Text, "input": []any{
			map[string]any{"role": "user", "content": p},
			map[string]any{"type": "function_call", "call_id": "call_1", "name": "read", "arguments": `{"path":".env"}`},
			map[string]any{"type": "function_call_output", "call_id": "call_1", "output": tr},
		}}),
		"/v1beta/models/" + alias + ":generateContent": mustJSON(t, map[string]any{
			"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "keys: " + creds[0].Text}}},
			"contents": []any{
				map[string]any{"role": "user", "parts": []any{map[string]any{"text": p}}},
				map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "read", "args": map[string]any{"path": ".env"}}, "thoughtSignature": "skip_thought_signature_validator"}}},
				map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "read", "response": map[string]any{"content": tr}}}}},
			}}),
	}
}

// TestSecretsNeverReachTheUpstream: credentials of every kind in prompts,
// system text and tool results, through every client format to every
// upstream format, reach no upstream; each arrives as its placeholder.
func TestSecretsNeverReachTheUpstream(t *testing.T) {
	s := newSecretsSetup(t, "redact", fakes.Options{})
	creds := secrettest.Corpus(11)
	for _, alias := range []string{"oa", "an", "ge"} {
		for path, body := range secretRequests(t, alias, creds) {
			rr := post(s.g, alice, path, body, "Anthropic-Version", "2023-06-01")
			if rr.Code != http.StatusOK {
				t.Fatalf("%s via %s: %d %s", alias, path, rr.Code, rr.Body)
			}
		}
	}
	for name, rec := range map[string]*fakes.Recorder{"openai": s.openai, "anthropic": s.anth, "gemini": s.gem} {
		if rec.Count() != 4 {
			t.Fatalf("%s upstream got %d requests, want 4", name, rec.Count())
		}
		for _, r := range rec.Requests() {
			body := string(r.Body)
			if k := secrettest.Leaked(body, creds); k != "" {
				t.Errorf("%s upstream %s: %s reached it: %s", name, r.Path, k, body)
			}
			if !strings.Contains(body, "[REDACTED:aws-access-token:") || !strings.Contains(body, "[REDACTED:private-key:") {
				t.Errorf("%s upstream %s: no placeholders: %s", name, r.Path, body)
			}
		}
	}
	evs := s.Events()
	if len(evs) < 12*len(creds) {
		t.Fatalf("%d events for 12 requests of %d credentials", len(evs), len(creds))
	}
	for _, e := range evs {
		if e.KeyID != "alice" || e.Action != secretscan.Redact || e.Direction != "request" || e.Rule == "" || e.Location.Path == "" {
			t.Fatalf("event %+v", e)
		}
	}
}

// TestSecretsBlock: block answers 400 in the client's own error shape,
// naming the rule and where (message index, tool call id), never the
// value, and nothing goes upstream.
func TestSecretsBlock(t *testing.T) {
	s := newSecretsSetup(t, "block", fakes.Options{})
	c := secrettest.Corpus(5)[8] // a GitHub token
	cases := []struct{ path, body, want string }{
		{"/v1/chat/completions", mustJSON(t, map[string]any{"model": "oa", "messages": []any{
			map[string]any{"role": "user", "content": "hi"},
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "call_7", "type": "function", "function": map[string]any{"name": "read", "arguments": "{}"}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_7", "content": "GITHUB_TOKEN=" + c.Value}}}),
			`{"error":{"message":"request refused by the gateway's secret firewall: a credential (rule github-pat) was found at messages[2].content (tool call call_7);`},
		{"/v1/messages", mustJSON(t, map[string]any{"model": "an", "max_tokens": 9, "messages": []any{
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_9", "content": "GITHUB_TOKEN=" + c.Value}}}}}),
			`{"type":"error","error":{"type":"invalid_request_error","message":"request refused by the gateway's secret firewall: a credential (rule github-pat) was found at messages[0].content[0].content (tool call toolu_9);`},
		{"/v1beta/models/ge:generateContent", mustJSON(t, map[string]any{"contents": []any{
			map[string]any{"role": "user", "parts": []any{map[string]any{"text": c.Value}}}}}),
			`"message":"request refused by the gateway's secret firewall: a credential (rule github-pat) was found at contents[0].parts[0].text;`},
	}
	for _, tc := range cases {
		rr := post(s.g, alice, tc.path, tc.body, "Anthropic-Version", "2023-06-01")
		if rr.Code != http.StatusBadRequest || !strings.Contains(rr.Body.String(), tc.want) {
			t.Errorf("%s: %d %s\nwant it to contain %s", tc.path, rr.Code, rr.Body, tc.want)
		}
		if strings.Contains(rr.Body.String(), c.Value) {
			t.Errorf("%s: the refusal carries the value", tc.path)
		}
	}
	if n := s.openai.Count() + s.anth.Count() + s.gem.Count(); n != 0 {
		t.Fatalf("%d requests reached an upstream", n)
	}
	for _, e := range s.Events() {
		if e.Action != secretscan.Block || e.Rule != "github-pat" {
			t.Fatalf("event %+v", e)
		}
	}
}

// TestSecretsLogAndDefaults: log sends the request as it is and reports
// it; with no secrets entry a local (api_base on loopback, openai/) entry
// logs and a cloud one (anthropic/) redacts.
func TestSecretsLogAndDefaults(t *testing.T) {
	s := newSecretsSetup(t, "", fakes.Options{})
	c := secrettest.Corpus(2)[3] // an AWS key id
	for _, alias := range []string{"oa", "an"} {
		body := fmt.Sprintf(`{"model":%q,"max_tokens":9,"messages":[{"role":"user","content":%q}]}`, alias, c.Text)
		if rr := post(s.g, alice, "/v1/chat/completions", body); rr.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", alias, rr.Code, rr.Body)
		}
	}
	if !strings.Contains(string(s.openai.Last().Body), c.Value) {
		t.Fatal("a local deployment's default (log) changed the request")
	}
	if strings.Contains(string(s.anth.Last().Body), c.Value) {
		t.Fatal("a cloud deployment's default (redact) let the key through")
	}
	evs := s.Events()
	if len(evs) != 2 || evs[0].Action != secretscan.Log || evs[1].Action != secretscan.Redact {
		t.Fatalf("events %+v", evs)
	}
}

// TestSecretsInAnswers: a model that writes credentials back, whole or
// streamed in pieces that split them, through every client format from
// every upstream format: the client gets placeholders.
func TestSecretsInAnswers(t *testing.T) {
	creds := secrettest.Corpus(21)
	var reply strings.Builder
	for _, c := range creds {
		reply.WriteString("Found in the repo: " + c.Text + "\n")
	}
	for _, chunks := range []int{0, 97} {
		s := newSecretsSetup(t, "redact", fakes.Options{Reply: reply.String(), Chunks: chunks})
		for _, alias := range []string{"oa", "an", "ge"} {
			for _, stream := range []bool{false, true} {
				reqs := map[string]string{
					"/v1/chat/completions": fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"show me"}]}`, alias, stream),
					"/v1/messages":         fmt.Sprintf(`{"model":%q,"stream":%v,"max_tokens":900,"messages":[{"role":"user","content":"show me"}]}`, alias, stream),
					"/v1/responses":        fmt.Sprintf(`{"model":%q,"stream":%v,"store":false,"input":"show me"}`, alias, stream),
				}
				if stream {
					reqs["/v1beta/models/"+alias+":streamGenerateContent?alt=sse"] = `{"contents":[{"role":"user","parts":[{"text":"show me"}]}]}`
				} else {
					reqs["/v1beta/models/"+alias+":generateContent"] = `{"contents":[{"role":"user","parts":[{"text":"show me"}]}]}`
				}
				for path, body := range reqs {
					rr := post(s.g, alice, path, body, "Anthropic-Version", "2023-06-01")
					if rr.Code != http.StatusOK {
						t.Fatalf("%s via %s stream=%v: %d %s", alias, path, stream, rr.Code, rr.Body)
					}
					got := rr.Body.String()
					if k := secrettest.Leaked(got, creds); k != "" {
						t.Fatalf("%s via %s stream=%v chunks=%d: %s reached the client:\n%s", alias, path, stream, chunks, k, got)
					}
					if !strings.Contains(got, "[REDACTED:private-key:") || !strings.Contains(got, "[REDACTED:aws-access-token:") {
						t.Fatalf("%s via %s stream=%v: no placeholder:\n%s", alias, path, stream, got)
					}
				}
			}
		}
		answers := 0
		for _, e := range s.Events() {
			if e.Direction == "answer" {
				answers++
			}
		}
		if answers < 24*len(creds)/2 {
			t.Fatalf("chunks=%d: %d answer detections", chunks, answers)
		}
	}
}

// TestSecretsConverse: Bedrock's Converse client format, its request's
// text and its answer framed as an AWS event stream, both redacted.
func TestSecretsConverse(t *testing.T) {
	creds := secrettest.Corpus(31)
	var reply strings.Builder
	for _, c := range creds {
		reply.WriteString("Found: " + c.Text + "\n")
	}
	s := newSecretsSetup(t, "redact", fakes.Options{Reply: reply.String(), Chunks: 61})
	id := url.PathEscape("oa")
	body := mustJSON(t, map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"text": creds[3].Text},
		map[string]any{"toolResult": map[string]any{"toolUseId": "tooluse_1", "content": []any{map[string]any{"text": creds[0].Text}}}},
	}}}, "inferenceConfig": map[string]any{"maxTokens": 64}})
	for _, path := range []string{"/model/" + id + "/converse", "/model/" + id + "/converse-stream"} {
		rr := post(s.g, alice, path, body)
		if rr.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rr.Code, rr.Body)
		}
		got := rr.Body.String()
		if strings.HasSuffix(path, "-stream") {
			got = ""
			dec := eventstream.NewDecoder()
			for rd := strings.NewReader(rr.Body.String()); rd.Len() > 0; {
				msg, err := dec.Decode(rd, nil)
				if err != nil {
					t.Fatal(err)
				}
				var ev struct{ Delta struct{ Text string } }
				_ = json.Unmarshal(msg.Payload, &ev)
				got += ev.Delta.Text
			}
		}
		if k := secrettest.Leaked(got, creds); k != "" {
			t.Fatalf("%s: %s reached the client: %s", path, k, got)
		}
		if !strings.Contains(got, "[REDACTED:private-key:") {
			t.Fatalf("%s: no placeholder: %s", path, got)
		}
	}
	for _, r := range s.openai.Requests() {
		if k := secrettest.Leaked(string(r.Body), creds); k != "" || !strings.Contains(string(r.Body), "[REDACTED:") {
			t.Fatalf("upstream got %s: %s", k, r.Body)
		}
	}
	found := false
	for _, e := range s.Events() {
		if e.Direction == "request" && e.Location.ToolCallID == "tooluse_1" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no detection names the toolUseId: %+v", s.Events())
	}
}

// TestSecretsStoredResponses: a stored Responses turn keeps the redacted
// request and the redacted answer: GET /v1/responses/{id} and its input
// items show placeholders only, streamed or not.
func TestSecretsStoredResponses(t *testing.T) {
	fw, err := testFirewall()
	if err != nil {
		t.Fatal(err)
	}
	store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rs := store.(ledger.ResponseStore)
	creds := secrettest.Corpus(41)
	var reply strings.Builder
	for _, c := range creds {
		reply.WriteString("Found: " + c.Text + "\n")
	}
	oa := httptest.NewServer(fakes.OpenAI(fakes.Options{Reply: reply.String(), Chunks: 37}, nil))
	t.Cleanup(oa.Close)
	g, _ := testGateway(t, "model_list:\n"+kindEntry("oa", "openai/m", oa.URL)+"    secrets: {action: redact}\n", func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return rs }
		o.Secrets = fw
	})
	for _, stream := range []bool{false, true} {
		rr := post(g, alice, "/v1/responses", mustJSON(t, map[string]any{"model": "oa", "stream": stream, "store": true, "input": creds[0].Text + "\n" + creds[3].Text}))
		if rr.Code != http.StatusOK {
			t.Fatalf("stream=%v: %d %s", stream, rr.Code, rr.Body)
		}
		i := strings.Index(rr.Body.String(), `"resp_`)
		if i < 0 {
			t.Fatalf("no response id: %s", rr.Body)
		}
		id := rr.Body.String()[i+1:]
		id = id[:strings.IndexByte(id, '"')]
		for _, path := range []string{"/v1/responses/" + id, "/v1/responses/" + id + "/input_items"} {
			req := httptest.NewRequest(http.MethodGet, path, nil).WithContext(policy.WithIdentity(context.Background(), alice))
			got := httptest.NewRecorder()
			g.ServeHTTP(got, req)
			if got.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", path, got.Code, got.Body)
			}
			if k := secrettest.Leaked(got.Body.String(), creds); k != "" {
				t.Fatalf("stream=%v %s: the stored state holds the %s: %s", stream, path, k, got.Body)
			}
			if !strings.Contains(got.Body.String(), "[REDACTED:") {
				t.Fatalf("stream=%v %s: no placeholder: %s", stream, path, got.Body)
			}
		}
	}
}
