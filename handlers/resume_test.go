package handlers

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// anthropicScript is a fake Anthropic upstream that streams text in
// pieces and, when cut is set, breaks the connection after them (or,
// with stall, says nothing after message_start until the gateway leaves).
type anthropicScript struct {
	pieces []string
	cut    bool
	stall  bool
	tool   bool // the answer starts with a tool call
	mu     sync.Mutex
	bodies []string
}

func (s *anthropicScript) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		_ = rc.Flush()
	}
	send("message_start", `{"type":"message_start","message":{"id":"msg_up","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`)
	if s.stall {
		<-r.Context().Done()
		return
	}
	i := 0
	if s.tool {
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`)
		send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`)
		panic(http.ErrAbortHandler)
	}
	send("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
	for _, p := range s.pieces {
		d, _ := json.Marshal(p)
		send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, d))
	}
	if s.cut {
		panic(http.ErrAbortHandler)
	}
	send("content_block_stop", `{"type":"content_block_stop","index":0}`)
	send("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, 5*len(s.pieces)))
	send("message_stop", `{"type":"message_stop"}`)
}

func (s *anthropicScript) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// resumeGateway has alias "a" on first and its fallback "b" on second,
// both Anthropic.
func resumeGateway(t *testing.T, first, second http.Handler, router string) (*Gateway, *recorder) {
	t.Helper()
	one, two := httptest.NewServer(first), httptest.NewServer(second)
	t.Cleanup(one.Close)
	t.Cleanup(two.Close)
	yaml := "model_list:\n" + kindEntry("a", "anthropic/claude-x", one.URL) + kindEntry("b", "anthropic/claude-x", two.URL) +
		"router_settings:\n  fallbacks:\n    - a: [b]\n" + router
	return testGateway(t, yaml, nil)
}

// sseEvents splits a client stream into (name, data) pairs.
func sseEvents(body string) [][2]string {
	var out [][2]string
	for _, block := range strings.Split(body, "\n\n") {
		var name, data string
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		if data != "" {
			out = append(out, [2]string{name, data})
		}
	}
	return out
}

// A Messages stream cut mid-answer continues on the fallback with the
// text so far as the assistant's prefill; the client sees one message.
func TestResumeAnthropicStreamOnFallback(t *testing.T) {
	cut := &anthropicScript{pieces: []string{"Hello, ", "wor"}, cut: true}
	rest := &anthropicScript{pieces: []string{"ld! ", "How are you?"}}
	g, obs := resumeGateway(t, cut, rest, "")
	w := post(g, alice, "/v1/messages", `{"model":"a","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "Anthropic-Version", "2023-06-01")
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var text strings.Builder
	starts, stops := 0, 0
	var final struct {
		Usage struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	for _, ev := range sseEvents(w.Body.String()) {
		var e struct {
			Index int
			Delta struct{ Text string }
		}
		_ = json.Unmarshal([]byte(ev[1]), &e)
		switch ev[0] {
		case "message_start":
			starts++
		case "content_block_start", "content_block_stop", "content_block_delta":
			if e.Index != 0 {
				t.Errorf("%s at index %d: the continuation's block must be the cut one", ev[0], e.Index)
			}
			text.WriteString(e.Delta.Text)
		case "message_stop":
			stops++
		case "message_delta":
			_ = json.Unmarshal([]byte(ev[1]), &final)
		case "error":
			t.Errorf("error event: %s", ev[1])
		}
	}
	if starts != 1 || stops != 1 || text.String() != "Hello, world! How are you?" {
		t.Fatalf("%d message_start, %d message_stop, text %q:\n%s", starts, stops, text.String(), w.Body)
	}
	if final.Usage.InputTokens != 20 || final.Usage.OutputTokens < 10 {
		t.Errorf("final usage %+v, want both parts' input (20) and output", final.Usage)
	}
	reqs := rest.requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0], `{"content":[{"text":"Hello, wor","type":"text"}],"role":"assistant"}`) {
		t.Errorf("the continuation's request: %v", reqs)
	}
	cutRec, restRec := cutAndRest(t, obs)
	if cutRec.Status != http.StatusBadGateway || cutRec.InputTokens != 10 || restRec.Alias != "a" || restRec.InputTokens != 10 || restRec.OutputTokens != 10 {
		t.Errorf("the cut part %+v, the rest %+v", cutRec, restRec)
	}
}

// cutAndRest are the two records of a stream cut and continued: the cut
// part's (an error) and the continuation's.
func cutAndRest(t *testing.T, obs *recorder) (cut, rest ledger.Record) {
	t.Helper()
	recs := obs.Records()
	if len(recs) != 2 {
		t.Fatalf("records %+v", recs)
	}
	for _, r := range recs {
		if r.Outcome == ledger.OutcomeOK {
			rest = r
		} else {
			cut = r
		}
	}
	return cut, rest
}

// An OpenAI client of the same alias sees one chat stream: one role, one
// id, the text whole.
func TestResumeChatClientSeesOneStream(t *testing.T) {
	// Cut after a space: the prefill cannot end with one, and the
	// continuation's leading space is not repeated.
	cut := &anthropicScript{pieces: []string{"Hello, "}, cut: true}
	rest := &anthropicScript{pieces: []string{" world!"}}
	g, _ := resumeGateway(t, cut, rest, "")
	w := post(g, alice, "/v1/chat/completions", `{"model":"a","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	ids, roles := map[string]bool{}, 0
	var text strings.Builder
	for _, ev := range sseEvents(w.Body.String()) {
		if ev[1] == "[DONE]" {
			continue
		}
		var c struct {
			ID      string
			Choices []struct {
				Delta struct{ Role, Content string }
			}
			Error any
		}
		if err := json.Unmarshal([]byte(ev[1]), &c); err != nil || c.Error != nil {
			t.Fatalf("chunk %s", ev[1])
		}
		ids[c.ID] = true
		for _, ch := range c.Choices {
			if ch.Delta.Role != "" {
				roles++
			}
			text.WriteString(ch.Delta.Content)
		}
	}
	if len(ids) != 1 || roles != 1 || text.String() != "Hello, world!" || !strings.Contains(w.Body.String(), "[DONE]") {
		t.Fatalf("ids %v, %d roles, text %q:\n%s", ids, roles, text.String(), w.Body)
	}
}

// A cut answer that started with a tool call cannot be a prefill: the
// client gets the error event it always got.
func TestResumeNotForToolCalls(t *testing.T) {
	rest := &anthropicScript{pieces: []string{"x"}}
	g, _ := resumeGateway(t, &anthropicScript{tool: true}, rest, "")
	w := post(g, alice, "/v1/messages", `{"model":"a","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "Anthropic-Version", "2023-06-01")
	if !strings.Contains(w.Body.String(), "event: error") || len(rest.requests()) != 0 {
		t.Fatalf("continuation requests %d:\n%s", len(rest.requests()), w.Body)
	}
}

// A stream that sends no content within first_token_timeout moves to the
// fallback before the client got a byte.
func TestFirstTokenTimeoutFailsOver(t *testing.T) {
	stalled := &anthropicScript{stall: true}
	rest := &anthropicScript{pieces: []string{"fine"}}
	g, obs := resumeGateway(t, stalled, rest, "  first_token_timeout: 300ms\n")
	start := time.Now()
	w := post(g, alice, "/v1/messages", `{"model":"a","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "Anthropic-Version", "2023-06-01")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("failover took %s", took)
	}
	evs := sseEvents(w.Body.String())
	if w.Code != 200 || len(evs) == 0 || evs[0][0] != "message_start" || strings.Count(w.Body.String(), "event: message_start") != 1 || !strings.Contains(w.Body.String(), `"fine"`) {
		t.Fatalf("status %d:\n%s", w.Code, w.Body)
	}
	if !testwait.Until(func() bool {
		for _, a := range obs.Attempts() {
			if a.Err == "first_token_timeout" && a.Retrying {
				return true
			}
		}
		return false
	}) {
		t.Errorf("attempts %+v", obs.Attempts())
	}
}

// The splice itself: indices after a stopped block move on, and a
// continuation that opens with a tool call closes the cut text block.
func TestAnthropicResumedIndices(t *testing.T) {
	inner := providers.NewAnthropicPassthroughStream()
	tr := providers.NewAnthropicResumed(inner, providers.AnthropicPrefix{Text: "ab", Blocks: 1, Open: true}, providers.Usage{})
	var out []byte
	for _, ev := range []providers.Event{
		{Name: []byte("message_start"), Data: []byte(`{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}`)},
		{Name: []byte("content_block_start"), Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`)},
		{Name: []byte("content_block_stop"), Data: []byte(`{"type":"content_block_stop","index":0}`)},
	} {
		var err error
		if out, err = tr.Translate(out, ev); err != nil {
			t.Fatal(err)
		}
	}
	want := "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
	if !strings.HasPrefix(string(out), want) || !strings.Contains(string(out), `"index":1}`) || strings.Contains(string(out), "message_start") {
		t.Errorf("spliced:\n%s", out)
	}
}

// chatScript is a fake chat-completions upstream streaming text in
// pieces, cut before its end when cut is set.
type chatScript struct {
	id     string
	pieces []string
	cut    bool
	mu     sync.Mutex
	bodies []string
}

func (s *chatScript) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	chunk := func(delta, finish, usage string) {
		fmt.Fprintf(w, `data: {"id":%q,"object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]%s}`+"\n\n", s.id, delta, finish, usage)
		_ = rc.Flush()
	}
	chunk(`{"role":"assistant","content":""}`, "null", "")
	for _, p := range s.pieces {
		d, _ := json.Marshal(p)
		chunk(`{"content":`+string(d)+`}`, "null", "")
	}
	if s.cut {
		panic(http.ErrAbortHandler)
	}
	chunk(`{}`, `"stop"`, "")
	fmt.Fprintf(w, `data: {"id":%q,"object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", s.id, 5*len(s.pieces), 10+5*len(s.pieces))
	_ = rc.Flush()
}

// A chat backend's cut stream continues on a backend that continues a
// trailing assistant message (assistant_prefill), for chat and Messages
// clients alike.
func TestResumeChatUpstream(t *testing.T) {
	for _, client := range []string{"chat", "messages"} {
		t.Run(client, func(t *testing.T) {
			cut := &chatScript{id: "chatcmpl-one", pieces: []string{"Hello, ", "wor"}, cut: true}
			rest := &chatScript{id: "chatcmpl-two", pieces: []string{"ld!"}}
			one, two := httptest.NewServer(cut), httptest.NewServer(rest)
			t.Cleanup(one.Close)
			t.Cleanup(two.Close)
			g, obs := testGateway(t, "model_list:\n"+entry("a", one.URL, "assistant_prefill: continue_final_message")+entry("b", two.URL, "assistant_prefill: continue_final_message")+
				"router_settings:\n  fallbacks:\n    - a: [b]\n", nil)
			var w *httptest.ResponseRecorder
			if client == "chat" {
				w = post(g, alice, "/v1/chat/completions", `{"model":"a","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
			} else {
				w = post(g, alice, "/v1/messages", `{"model":"a","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "Anthropic-Version", "2023-06-01")
			}
			body := w.Body.String()
			var text strings.Builder
			for _, ev := range sseEvents(body) {
				var c struct {
					Choices []struct{ Delta struct{ Content string } }
					Delta   struct{ Text string }
				}
				_ = json.Unmarshal([]byte(ev[1]), &c)
				for _, ch := range c.Choices {
					text.WriteString(ch.Delta.Content)
				}
				text.WriteString(c.Delta.Text)
			}
			if text.String() != "Hello, world!" || strings.Contains(body, "chatcmpl-two") || strings.Count(body, `"role":"assistant"`) != 1 || strings.Contains(body, "error") {
				t.Fatalf("text %q:\n%s", text.String(), body)
			}
			// The cut part's tokens as recorded (estimated: it sent no
			// usage): 3 events out, the request's bytes / 4 in.
			if client == "chat" && (!strings.Contains(body, `"completion_tokens":8`) || strings.Contains(body, `"prompt_tokens":10,`)) {
				t.Errorf("the usage chunk does not sum both parts:\n%s", body)
			}
			reqs := rest.bodies
			if len(reqs) != 1 || !strings.Contains(reqs[0], `"continue_final_message":true`) || !strings.Contains(reqs[0], `{"content":"Hello, wor","role":"assistant"}`) {
				t.Errorf("the continuation's request: %v", reqs)
			}
			if n := len(obs.Records()); n != 2 {
				t.Errorf("%d records, want 2", n)
			}
		})
	}
}

// BenchmarkStreamJournal is a healthy Anthropic stream with and without
// a fallback after it: the difference is what keeping the journal costs
// when nothing fails.
func BenchmarkStreamJournal(b *testing.B) {
	up := httptest.NewServer(&anthropicScript{pieces: strings.Split("one two three four five six seven eight", " ")})
	b.Cleanup(up.Close)
	body := `{"model":"a","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct{ name, router string }{{"alone", ""}, {"with-fallback", "router_settings:\n  fallbacks:\n    - a: [b]\n"}} {
		b.Run(tc.name, func(b *testing.B) {
			g, _ := testGateway(b, "model_list:\n"+kindEntry("a", "anthropic/claude-x", up.URL)+kindEntry("b", "anthropic/claude-x", up.URL)+tc.router, nil)
			b.ReportAllocs()
			for b.Loop() {
				if w := post(g, alice, "/v1/messages", body, "Anthropic-Version", "2023-06-01"); w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// A Responses client sees one response: one response.created, the text
// whole, completed.
func TestResumeResponsesClient(t *testing.T) {
	cut := &anthropicScript{pieces: []string{"Hello, ", "wor"}, cut: true}
	rest := &anthropicScript{pieces: []string{"ld!"}}
	g, _ := resumeGateway(t, cut, rest, "")
	w := post(g, alice, "/v1/responses", `{"model":"a","stream":true,"store":false,"input":"hi"}`)
	var text strings.Builder
	created, completed := 0, 0
	for _, ev := range sseEvents(w.Body.String()) {
		var e struct{ Type, Delta string }
		_ = json.Unmarshal([]byte(ev[1]), &e)
		switch e.Type {
		case "response.created":
			created++
		case "response.completed":
			completed++
		case "response.output_text.delta":
			text.WriteString(e.Delta)
		case "response.failed", "error":
			t.Errorf("%s", ev[1])
		}
	}
	if created != 1 || completed != 1 || text.String() != "Hello, world!" {
		t.Fatalf("%d created, %d completed, text %q:\n%s", created, completed, text.String(), w.Body)
	}
}

// A stream cut after the upstream wrote a secret continues with the
// answer so far as the prefill: the firewall redacts that prefill as it
// redacted the client's copy, so the next deployment never sees the
// value (a hostile review found it sent raw: the journal copies the
// upstream's events before the client's redaction).
func TestResumePrefillPassesTheFirewall(t *testing.T) {
	var pat string
	for _, c := range secrettest.Corpus(3) {
		if c.Kind == "github-pat" {
			pat = c.Value
		}
	}
	if pat == "" {
		t.Fatal("the corpus has no github-pat")
	}
	fw, err := testFirewall()
	if err != nil {
		t.Fatal(err)
	}
	cut := &anthropicScript{pieces: []string{"Your token is ", pat + " and "}, cut: true}
	rest := &anthropicScript{pieces: []string{"that is all."}}
	one, two := httptest.NewServer(cut), httptest.NewServer(rest)
	t.Cleanup(one.Close)
	t.Cleanup(two.Close)
	yaml := "model_list:\n" + kindEntry("a", "anthropic/claude-x", one.URL) + kindEntry("b", "anthropic/claude-x", two.URL) +
		"router_settings:\n  fallbacks:\n    - a: [b]\n"
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) { o.Secrets = fw })
	w := post(g, alice, "/v1/messages", `{"model":"a","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "Anthropic-Version", "2023-06-01")
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), pat) {
		t.Errorf("the client saw the secret:\n%s", w.Body)
	}
	reqs := rest.requests()
	if len(reqs) != 1 {
		t.Fatalf("the continuation was not sent: %v", reqs)
	}
	if strings.Contains(reqs[0], pat) {
		t.Errorf("the continuation carried the secret to the next deployment: %s", reqs[0])
	}
	if !strings.Contains(reqs[0], "[REDACTED:") {
		t.Errorf("the continuation's prefill has no placeholder: %s", reqs[0])
	}
}
