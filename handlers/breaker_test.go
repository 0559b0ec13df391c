package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// loopingChat is an OpenAI chat request of an agent session whose last
// turn is the n-th run of the same failing shell call.
func loopingChat(alias string, n int) string {
	msgs := `{"role":"user","content":"build it"}`
	for i := range n {
		msgs += fmt.Sprintf(`,{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"make\"}"}}]}`+
			`,{"role":"tool","tool_call_id":"c%d","content":"Exit code: 2\nmake: *** No rule to make target"}`, i, i)
	}
	return fmt.Sprintf(`{"model":%q,"messages":[%s]}`, alias, msgs)
}

func breakerGateway(t *testing.T, upstream http.HandlerFunc) *Gateway {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	g, _ := testGateway(t, "model_list:\n"+entry("m", up.URL)+kindEntry("g", "gemini/gemini-2.5-flash", up.URL), func(o *GatewayOptions) {
		o.Breaker = breaker.New(breaker.Options{})
	})
	return g
}

var breakerAlice = &policy.Identity{KeyID: "alice", Role: policy.RoleUser, Limits: ledger.Limits{Breaker: &ledger.BreakerRules{Repeat: 3, Action: breaker.ActionPause}}}

// TestBreakerPauseInCallersFamily: the request that carries the third
// identical failing call is refused with 429 in the caller's error shape
// (OpenAI's here), never reaches the upstream, and says how to resume;
// the session's next request too; another session goes on; the resume
// link's page and button free it.
func TestBreakerPauseInCallersFamily(t *testing.T) {
	var hits int
	var mu sync.Mutex
	g := breakerGateway(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		writeOpenAI(w, r, "up")
	})
	for n := 1; n <= 2; n++ {
		if rec := post(g, breakerAlice, "/v1/chat/completions", loopingChat("m", n), "Session-Id", "s1"); rec.Code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", n, rec.Code, rec.Body)
		}
	}
	rec := post(g, breakerAlice, "/v1/chat/completions", loopingChat("m", 3), "Session-Id", "s1")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("X-Should-Retry") != "false" {
		t.Fatalf("the looping turn: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != "agent_session_paused" ||
		!strings.Contains(e.Error.Message, "`shell` call") || !strings.Contains(e.Error.Message, "caddy modelgate resume s1") {
		t.Fatalf("refusal body %s", rec.Body)
	}
	if hits != 2 {
		t.Errorf("upstream saw %d requests, want 2", hits)
	}
	if rec := post(g, breakerAlice, "/v1/chat/completions", loopingChat("m", 4), "Session-Id", "s1"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the paused session's next request: %d", rec.Code)
	}
	if rec := post(g, breakerAlice, "/v1/chat/completions", loopingChat("m", 1), "Session-Id", "s2"); rec.Code != http.StatusOK {
		t.Fatalf("another session: %d %s", rec.Code, rec.Body)
	}

	// A link without its token, a wrong token: nothing changes.
	get := func(q string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, breaker.ResumePath+"?"+q, nil))
		return rec
	}
	if rec := get("k=alice&s=s1"); rec.Code != http.StatusBadRequest {
		t.Errorf("a link without a token: %d", rec.Code)
	}
	form := url.Values{"k": {"alice"}, "s": {"s1"}, "t": {"0123"}}
	postForm := func(v url.Values) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, breaker.ResumePath, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		return rec
	}
	if rec := postForm(form); rec.Code != http.StatusForbidden {
		t.Errorf("a wrong token: %d %s", rec.Code, rec.Body)
	}
	// A guessed link learns nothing: no button, not whether the session
	// is paused, nor why (a hostile review read both without the token).
	if rec := get(form.Encode()); strings.Contains(rec.Body.String(), "Resume the session") || strings.Contains(rec.Body.String(), "paused by") ||
		rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("the page of a link with a wrong token: %d %s", rec.Code, rec.Body)
	}
	if rec := post(g, breakerAlice, "/v1/chat/completions", loopingChat("m", 5), "Session-Id", "s1"); rec.Code != http.StatusTooManyRequests {
		t.Fatal("a wrong token resumed the session")
	}
}

// TestBreakerHeldInGeminiFamily: a Gemini client's held session gets
// google.rpc's error shape.
func TestBreakerHeldInGeminiFamily(t *testing.T) {
	g := breakerGateway(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1}}`))
	})
	stopper := &policy.Identity{KeyID: "alice", Role: policy.RoleUser, Limits: ledger.Limits{Breaker: &ledger.BreakerRules{Repeat: 3, Action: breaker.ActionStop}}}
	turn := func(n int) *httptest.ResponseRecorder {
		contents := `{"role":"user","parts":[{"text":"go"}]}`
		for range n {
			contents += `,{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"npm test"}}}]}` +
				`,{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"error":"exit 1"}}}]}`
		}
		return post(g, stopper, "/v1beta/models/g:generateContent", `{"contents":[`+contents+`]}`, "X-Session-Id", "gem-1")
	}
	for n := 1; n <= 2; n++ {
		if rec := turn(n); rec.Code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", n, rec.Code, rec.Body)
		}
	}
	rec := turn(3)
	var e struct {
		Error struct {
			Code    int
			Message string
			Status  string
		}
	}
	if rec.Code != http.StatusTooManyRequests || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Status != "RESOURCE_EXHAUSTED" ||
		!strings.Contains(e.Error.Message, "an admin must clear it") {
		t.Fatalf("stopped Gemini session: %d %s", rec.Code, rec.Body)
	}
}

// TestBreakerNudgeReachesUpstream: with action nudge the tripping request
// goes upstream with the note as its last message, and says so in a
// header; the request before it went unchanged.
func TestBreakerNudgeReachesUpstream(t *testing.T) {
	var bodies []string
	var mu sync.Mutex
	g := breakerGateway(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	})
	nudge := &policy.Identity{KeyID: "alice", Role: policy.RoleUser, Limits: ledger.Limits{Breaker: &ledger.BreakerRules{Repeat: 3, Action: breaker.ActionNudge}}}
	var last *httptest.ResponseRecorder
	for n := 1; n <= 3; n++ {
		last = post(g, nudge, "/v1/chat/completions", loopingChat("m", n), "Session-Id", "n1")
		if last.Code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", n, last.Code, last.Body)
		}
	}
	if last.Header().Get(HeaderBreaker) != "nudge" {
		t.Errorf("the nudged answer lacks %s", HeaderBreaker)
	}
	var req struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal([]byte(bodies[2]), &req); err != nil {
		t.Fatalf("upstream body: %v %s", err, bodies[2])
	}
	note := req.Messages[len(req.Messages)-1]
	if note.Role != "user" || !strings.Contains(note.Content, "loop breaker") || !strings.Contains(note.Content, "`shell` call") {
		t.Fatalf("the upstream's last message = %+v", note)
	}
	if strings.Contains(bodies[1], "loop breaker") {
		t.Error("a turn before the trip carried the note")
	}
}

// TestBreakerOffWithoutRules: a key without breaker rules is never
// watched, however it loops.
func TestBreakerOffWithoutRules(t *testing.T) {
	g := breakerGateway(t, func(w http.ResponseWriter, r *http.Request) { writeOpenAI(w, r, "up") })
	for n := 1; n <= 8; n++ {
		if rec := post(g, alice, "/v1/chat/completions", loopingChat("m", n), "Session-Id", "s1"); rec.Code != http.StatusOK {
			t.Fatalf("turn %d: %d", n, rec.Code)
		}
	}
}

// TestBreakerLinkIgnoresCallersHost: the resume link in the team chat is
// built on the configured public URL; a key holder's forged Host used to
// become the link's site. Without a public URL the line has no link.
func TestBreakerLinkIgnoresCallersHost(t *testing.T) {
	for _, public := range []string{"", "https://gw.example.com"} {
		var mu sync.Mutex
		var lines []string
		b := breaker.New(breaker.Options{PublicURL: public, Post: func(_ context.Context, text string) error {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, text)
			return nil
		}})
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeOpenAI(w, r, "up") }))
		t.Cleanup(up.Close)
		g, _ := testGateway(t, "model_list:\n"+entry("m", up.URL), func(o *GatewayOptions) { o.Breaker = b })
		for n := 1; n <= 3; n++ {
			post(g, breakerAlice, "http://evil.example/v1/chat/completions", loopingChat("m", n), "Session-Id", "s1")
		}
		b.Drain(context.Background())
		mu.Lock()
		got := strings.Join(lines, "\n")
		mu.Unlock()
		if strings.Contains(got, "evil.example") || !strings.Contains(got, "`caddy modelgate resume s1 --api-key-id alice`") {
			t.Errorf("public URL %q: chat %q names the caller's Host or lacks the CLI command", public, got)
		}
		if hasLink := strings.Contains(got, "https://gw.example.com"+breaker.ResumePath+"?"); hasLink != (public != "") {
			t.Errorf("public URL %q: chat %q, want a link exactly when one is configured", public, got)
		}
	}
}

// TestBreakerRotatingSessionIDsHeld: a loop that sends each request under
// a new session id, or none, is paused at the same turn as a session's
// (its conversation under the key is watched), in the caller's family.
func TestBreakerRotatingSessionIDsHeld(t *testing.T) {
	g := breakerGateway(t, func(w http.ResponseWriter, r *http.Request) { writeOpenAI(w, r, "up") })
	for n := 1; n <= 2; n++ {
		if rec := post(g, breakerAlice, "/v1/chat/completions", loopingChat("m", n), "Session-Id", fmt.Sprint("rot-", n)); rec.Code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", n, rec.Code, rec.Body)
		}
	}
	rec := post(g, breakerAlice, "/v1/chat/completions", loopingChat("m", 3))
	var e struct {
		Error struct{ Message, Code string }
	}
	if rec.Code != http.StatusTooManyRequests || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code != "agent_session_paused" ||
		!strings.Contains(e.Error.Message, "caddy modelgate resume conversation-") {
		t.Fatalf("the looping turn without a session id: %d %s", rec.Code, rec.Body)
	}
	if rec := post(g, breakerAlice, "/v1/chat/completions", loopingChat("m", 4), "Session-Id", "rot-new"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a new session id evaded the pause: %d", rec.Code)
	}
}

// TestBreakerTrippingTurnRetriedUnderNewID (hostile pass 10, H10-9): the
// turn that paused session s1, sent again under a new session id or none,
// is refused naming s1 and never reaches the upstream; s1's resume link
// frees it under any id.
func TestBreakerTrippingTurnRetriedUnderNewID(t *testing.T) {
	var mu sync.Mutex
	hits := 0
	g := breakerGateway(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		writeOpenAI(w, r, "up")
	})
	for n := 1; n <= 3; n++ {
		want := http.StatusOK
		if n == 3 {
			want = http.StatusTooManyRequests
		}
		if rec := post(g, breakerAlice, "/v1/chat/completions", loopingChat("m", n), "Session-Id", "s1-x1"); rec.Code != want {
			t.Fatalf("turn %d: %d %s", n, rec.Code, rec.Body)
		}
	}
	for _, header := range [][]string{{"Session-Id", "s2-x1"}, nil} {
		rec := post(g, breakerAlice, "/v1/chat/completions", loopingChat("m", 3), header...)
		if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "caddy modelgate resume s1-x1 ") {
			t.Fatalf("the tripping turn retried with %v: %d %s", header, rec.Code, rec.Body)
		}
	}
	mu.Lock()
	if hits != 2 {
		t.Errorf("upstream saw %d requests, want 2", hits)
	}
	mu.Unlock()
	if _, ok, err := g.opts.Breaker.Resume(context.Background(), "alice", "s1-x1", "", "admin"); !ok || err != nil {
		t.Fatalf("resume: %v %v", ok, err)
	}
	if rec := post(g, breakerAlice, "/v1/chat/completions", loopingChat("m", 3), "Session-Id", "s3-x1"); rec.Code != http.StatusOK {
		t.Fatalf("after the resume, under a new id: %d %s", rec.Code, rec.Body)
	}
}
