package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/modelgate/modelgate/handlers/responses"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// flipResolver is a resolver whose answer a test changes, closing its
// Changed channel as the control snapshot does.
type flipResolver struct {
	mu      sync.Mutex
	refusal *providers.APIError
	changed chan struct{}
	calls   int
}

func newFlipResolver() *flipResolver { return &flipResolver{changed: make(chan struct{})} }

func (f *flipResolver) Identify(secret string) (*policy.Identity, *providers.APIError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if secret != "sk-ws-test-key" {
		return nil, &providers.APIError{Status: http.StatusUnauthorized, Message: "invalid API key"}
	}
	if f.refusal != nil {
		return nil, f.refusal
	}
	return alice, nil
}

func (f *flipResolver) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *flipResolver) refuse(e *providers.APIError) {
	f.mu.Lock()
	f.refusal = e
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// wsGateway serves g behind a stand-in for llm_auth that attaches res.
func wsGateway(t testing.TB, g *Gateway, res policy.Resolver) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := policy.WithResolver(policy.WithIdentity(r.Context(), alice), res)
		g.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/responses"
}

func dialWS(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer sk-ws-test-key"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// wsTurnDone sends one turn and reads to its last event's type.
func wsTurnDone(t *testing.T, c *websocket.Conn, body string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(body)); err != nil {
		return "", err
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return "", err
		}
		switch {
		case strings.Contains(string(b), `"type":"response.completed"`):
			return "response.completed", nil
		case strings.HasPrefix(string(b), `{"error"`) || strings.Contains(string(b), `"type":"error"`):
			return string(b), nil
		}
	}
}

// closeOf reads until the connection is closed and returns its close
// status; it fails after within.
func closeOf(t *testing.T, c *websocket.Conn, within time.Duration) (websocket.CloseError, time.Duration) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("not closed by the gateway within %v: %v", within, err)
			}
			return ce, time.Since(start)
		}
	}
}

const echoTurn = `{"type":"response.create","model":"offline","store":false,"input":"hi"}`

const echoModels = "model_list:\n  - model_name: offline\n    proxy_params:\n      model: echo/echo\n"

// TestWebSocketTurnsReidentify: each turn identifies the key again through
// the resolver that admitted the upgrade, and a change the resolver
// announces that refuses the key closes the connection with 1008 at once,
// with the refusal as an error event and as the close reason.
func TestWebSocketTurnsReidentify(t *testing.T) {
	g, _ := testGateway(t, echoModels, nil)
	res := newFlipResolver()
	c := dialWS(t, wsGateway(t, g, res))
	for i := 0; i < 2; i++ {
		if got, err := wsTurnDone(t, c, echoTurn); err != nil || got != "response.completed" {
			t.Fatalf("turn %d: %q %v", i, got, err)
		}
	}
	res.mu.Lock()
	calls := res.calls
	res.mu.Unlock()
	// One identification when the watcher starts, one per turn.
	if calls < 3 {
		t.Errorf("the key was identified %d times over two turns, want once per turn and by the watcher", calls)
	}
	res.refuse(&providers.APIError{Status: http.StatusUnauthorized, Message: "API key alice is archived, which is final"})
	ce, took := closeOf(t, c, 2*time.Second)
	if ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "archived") {
		t.Errorf("closed with %d %q, want 1008 naming the archive", ce.Code, ce.Reason)
	}
	t.Logf("closed %v after the change", took)
}

// TestWebSocketLifetime: a connection is closed (1000, naming the
// lifetime) when it has been open for WebSocketLifetime.
func TestWebSocketLifetime(t *testing.T) {
	g, _ := testGateway(t, echoModels, func(o *GatewayOptions) { o.WebSocketLifetime = 300 * time.Millisecond })
	c := dialWS(t, wsGateway(t, g, newFlipResolver()))
	if got, err := wsTurnDone(t, c, echoTurn); err != nil || got != "response.completed" {
		t.Fatalf("turn: %q %v", got, err)
	}
	wantClose(t, c, websocket.StatusNormalClosure, "maximum lifetime")
}

// wantClose fails unless the gateway closes c with code and a reason
// naming want within 2 s.
func wantClose(t *testing.T, c *websocket.Conn, code websocket.StatusCode, want string) {
	t.Helper()
	ce, took := closeOf(t, c, 3*time.Second)
	if ce.Code != code || !strings.Contains(ce.Reason, want) {
		t.Errorf("closed with %d %q, want %d naming %q", ce.Code, ce.Reason, code, want)
	}
	if took > 2*time.Second {
		t.Errorf("closed after %v, want within 2s", took)
	}
}

// TestBackgroundStartReidentifies: a background response's run is
// admitted as its key stands when the run starts, through the resolver
// that admitted the create: a key refused by then leaves the response
// failed with the refusal, and nothing goes upstream.
func TestBackgroundStartReidentifies(t *testing.T) {
	rs := sqliteResponses(t)
	g, obs := testGateway(t, echoModels, func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return rs }
	})
	res := newFlipResolver()
	res.refuse(&providers.APIError{Status: http.StatusUnauthorized, Code: "invalid_api_key", Message: "API key alice is archived, which is final"})
	req := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(`{"model":"offline","background":true,"input":"hi"}`))
	req.Header.Set("Authorization", "Bearer sk-ws-test-key")
	req = req.WithContext(policy.WithResolver(policy.WithIdentity(req.Context(), alice), res))
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	var created struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &created); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		stored, err := rs.GetResponse(context.Background(), "alice", created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if s := responses.StoredStatus(stored.Response); s == "failed" {
			if !strings.Contains(string(stored.Response), "archived") {
				t.Errorf("failed without the refusal: %s", stored.Response)
			}
			break
		} else if s != "queued" && s != "in_progress" || time.Now().After(deadline) {
			t.Fatalf("the run of a refused key reads %s: %s", s, stored.Response)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, a := range obs.Attempts() {
		t.Errorf("an attempt went upstream: %+v", a)
	}
}

// expiringResolver identifies alice with an expiry and refuses her once it
// has passed, as policy.Auth does a runtime key; it never announces a
// change.
type expiringResolver struct{ expires time.Time }

func (e expiringResolver) Identify(string) (*policy.Identity, *providers.APIError) {
	if !time.Now().Before(e.expires) {
		return nil, &providers.APIError{Status: http.StatusUnauthorized, Message: "API key alice expired at " + e.expires.Format(time.RFC3339)}
	}
	id := *alice
	id.Expires = e.expires
	return &id, nil
}

func (expiringResolver) Changed() <-chan struct{} { return nil }

// TestWebSocketKeyExpires: a connection whose key expires is closed with
// 1008 at the expiry, with no change to the key store to announce it.
func TestWebSocketKeyExpires(t *testing.T) {
	g, _ := testGateway(t, echoModels, nil)
	c := dialWS(t, wsGateway(t, g, expiringResolver{expires: time.Now().Add(400 * time.Millisecond)}))
	if got, err := wsTurnDone(t, c, echoTurn); err != nil || got != "response.completed" {
		t.Fatalf("turn before the expiry: %q %v", got, err)
	}
	wantClose(t, c, websocket.StatusPolicyViolation, "expired")
}

// TestSweepLapsedBackground: the sweep marks failed a background response
// whose instance stopped renewing its lease and that no one reads, and
// drops the lease of one that finished meanwhile; a response under a live
// lease is left alone.
func TestSweepLapsedBackground(t *testing.T) {
	rs := sqliteResponses(t)
	now := time.Now()
	g, _ := testGateway(t, echoModels, func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return rs }
		o.Now = func() time.Time { return now }
	})
	ctx := context.Background()
	put := func(id, status string, lease time.Time) {
		if err := rs.PutResponse(ctx, ledger.StoredResponse{ID: id, KeyID: "alice", Created: now,
			Response: json.RawMessage(`{"id":"` + id + `","status":"` + status + `"}`), LeaseUntil: lease}); err != nil {
			t.Fatal(err)
		}
	}
	put("resp_dead", "in_progress", now.Add(-time.Second))
	put("resp_cancelled", "cancelled", now.Add(-time.Second))
	put("resp_live", "in_progress", now.Add(time.Minute))
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go g.rstate.SweepLapsedEvery(sctx, 10*time.Millisecond)
	for deadline := time.Now().Add(3 * time.Second); ; {
		lapsed, err := rs.LapsedResponses(ctx, now, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(lapsed) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still lapsed after the sweep: %+v", lapsed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for id, want := range map[string]string{"resp_dead": "failed", "resp_cancelled": "cancelled", "resp_live": "in_progress"} {
		got, err := rs.GetResponse(ctx, "alice", id)
		if err != nil || responses.StoredStatus(got.Response) != want {
			t.Errorf("%s: %s (%v), want %s", id, got.Response, err, want)
		}
	}
}

// TestWebSocketClosedOnReload: when the gateway that admitted a
// connection is closed (Caddy cleans it up after a reload replaced its
// config), an idle connection is closed at once with 1012 naming the
// reload, and one opened on it afterwards too: neither serves a turn
// under the old config (hostile re-test D4).
func TestWebSocketClosedOnReload(t *testing.T) {
	g, _ := testGateway(t, echoModels, nil)
	url := wsGateway(t, g, newFlipResolver())
	c := dialWS(t, url)
	if got, err := wsTurnDone(t, c, echoTurn); err != nil || got != "response.completed" {
		t.Fatalf("turn before the reload: %q %v", got, err)
	}
	g.Close()
	wantClose(t, c, websocket.StatusServiceRestart, "reloaded")
	late := dialWS(t, url)
	wantClose(t, late, websocket.StatusServiceRestart, "reloaded")
}

// TestWebSocketReloadFinishesTurn: a turn in progress when the gateway is
// closed runs to its end, as an HTTP request in flight across a reload
// does, and the connection is closed with 1012 right after it.
func TestWebSocketReloadFinishesTurn(t *testing.T) {
	base, arrived, open := gatedUpstream(t)
	g, _ := testGateway(t, "model_list:\n"+entry("slow", base), nil)
	c := dialWS(t, wsGateway(t, g, newFlipResolver()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"slow","store":false,"input":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * time.Second); arrived() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the turn never reached the upstream")
		}
	}
	g.Close()
	open()
	completed := false
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusServiceRestart {
				t.Fatalf("ended with %v, want a 1012 close", err)
			}
			break
		}
		completed = completed || strings.Contains(string(b), `"type":"response.completed"`)
	}
	if !completed {
		t.Error("the turn in progress at the reload did not complete before the close")
	}
}

// TestWebSocketKeptHistoryContinues: a conversation the connection kept
// (here 3 MiB of a 4 MiB max_request_body) continues with
// previous_response_id on a gateway with no other traffic, as the same
// input sent whole over HTTP is served alone: the working-set bound
// leaves room for what the connection itself holds, the kept history
// included, instead of waiting for memory only this connection can free.
func TestWebSocketKeptHistoryContinues(t *testing.T) {
	g, _ := testGateway(t, echoModels, func(o *GatewayOptions) {
		o.MaxRequestBody = 4 << 20
		o.BodyMemory = 8 * o.MaxRequestBody
		o.BodyMemoryWait = 100 * time.Millisecond
	})
	c := dialWS(t, wsGateway(t, g, newFlipResolver()))
	warm, _ := json.Marshal(map[string]any{"type": "response.create", "model": "offline", "store": false, "generate": false,
		"input": strings.Repeat("x", 3<<20)})
	id := wsCompletedID(t, c, warm)
	next := `{"type":"response.create","model":"offline","store":false,"previous_response_id":"` + id + `","input":"and?"}`
	if got, err := wsTurnDone(t, c, next); err != nil || got != "response.completed" {
		t.Fatalf("continuing the kept conversation: %.300s %v", got, err)
	}
	if used, _, _ := g.bodyMem.stats(); used > g.bodyMem.max {
		t.Errorf("body memory used %d, over its bound %d", used, g.bodyMem.max)
	}
}

// TestWebSocketLostHistoryError: a conversation the connection could not
// keep (with its echoed output, larger than max_request_body) is refused
// to its continuation as its HTTP answer would be: 413 with the code
// request_too_large, which a client branches on.
func TestWebSocketLostHistoryError(t *testing.T) {
	g, _ := testGateway(t, echoModels, func(o *GatewayOptions) { o.MaxRequestBody = 1 << 20 })
	c := dialWS(t, wsGateway(t, g, newFlipResolver()))
	c.SetReadLimit(16 << 20) // the echoed events carry the input
	first, _ := json.Marshal(map[string]any{"type": "response.create", "model": "offline", "store": false,
		"input": strings.Repeat("x", 700<<10)})
	id := wsCompletedID(t, c, first)
	next := `{"type":"response.create","model":"offline","store":false,"previous_response_id":"` + id + `","input":"and?"}`
	got, err := wsTurnDone(t, c, next)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Status int `json:"status"`
		Error  struct {
			Type, Code string
		} `json:"error"`
	}
	if json.Unmarshal([]byte(got), &ev) != nil || ev.Status != http.StatusRequestEntityTooLarge ||
		ev.Error.Code != "request_too_large" || ev.Error.Type != "invalid_request_error" {
		t.Errorf("continuing a conversation the connection did not keep: %.300s, want 413 request_too_large", got)
	}
}

// TestWebSocketOtherKeysPreviousResponse: a turn on a WebSocket that
// continues another key's stored response is refused as over HTTP (400
// previous_response_not_found), and nothing of that response reaches the
// caller or the backend.
func TestWebSocketOtherKeysPreviousResponse(t *testing.T) {
	rs := sqliteResponses(t)
	if err := rs.PutResponse(context.Background(), ledger.StoredResponse{ID: "resp_bobs", KeyID: "bob", Model: "offline",
		Created: time.Now(), Input: json.RawMessage(`[{"type":"message","role":"user","content":"BOB-SECRET"}]`),
		Response: json.RawMessage(`{"id":"resp_bobs","object":"response","status":"completed","output":[]}`)}); err != nil {
		t.Fatal(err)
	}
	g, _ := testGateway(t, echoModels, func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return rs }
	})
	c := dialWS(t, wsGateway(t, g, newFlipResolver()))
	c.SetReadLimit(1 << 20)
	got, err := wsTurnDone(t, c, `{"type":"response.create","model":"offline","previous_response_id":"resp_bobs","input":"and?"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got == "response.completed" || strings.Contains(got, "BOB-SECRET") || !strings.Contains(got, `"code":"previous_response_not_found"`) {
		t.Errorf("alice continuing bob's response over a WebSocket: %.300s, want previous_response_not_found", got)
	}
	// The same continuation of her own stored response is served.
	if err := rs.PutResponse(context.Background(), ledger.StoredResponse{ID: "resp_alices", KeyID: "alice", Model: "offline",
		Created: time.Now(), Input: json.RawMessage(`[{"type":"message","role":"user","content":"hi"}]`),
		Response: json.RawMessage(`{"id":"resp_alices","object":"response","status":"completed","output":[]}`)}); err != nil {
		t.Fatal(err)
	}
	if got, err := wsTurnDone(t, c, `{"type":"response.create","model":"offline","previous_response_id":"resp_alices","input":"and?"}`); err != nil || got != "response.completed" {
		t.Errorf("alice continuing her own response: %.300s %v", got, err)
	}
}

// wsCompletedID sends one turn and returns the id of its completed
// response; an error event fails the test.
func wsCompletedID(t *testing.T, c *websocket.Conn, turn []byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, turn); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			Type     string `json:"type"`
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		if json.Unmarshal(b, &ev) != nil || ev.Type == "error" {
			t.Fatalf("turn: %.300s", b)
		}
		if ev.Type == "response.completed" {
			return ev.Response.ID
		}
	}
}

// sqliteResponses is a responses store in a new SQLite ledger, closed
// when the test ends.
func sqliteResponses(t *testing.T) ledger.ResponseStore {
	t.Helper()
	store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store.(ledger.ResponseStore)
}
