package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/modelgate/modelgate/internal/fakes"
)

// wsClient is one Responses WebSocket connection of a test.
type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

func dialResponsesWS(t *testing.T, g *gateway, key string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(g.base, "http") + "/v1/responses"
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return &wsClient{t: t, c: c}
}

// turn sends one response.create and returns its last event
// (response.completed or error), or the error that ended the connection.
func (w *wsClient) turn(model string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body := `{"type":"response.create","model":"` + model + `","store":false,"input":"hi","max_output_tokens":10}`
	if err := w.c.Write(ctx, websocket.MessageText, []byte(body)); err != nil {
		return nil, err
	}
	for {
		_, b, err := w.c.Read(ctx)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			w.t.Fatalf("frame %s: %v", b, err)
		}
		if m["type"] == "response.completed" || m["type"] == "error" {
			return m, nil
		}
	}
}

// closed reads until the gateway closes the connection and returns the
// close frame's code and reason, the events that came before it, and how
// long it took; it fails after within.
func (w *wsClient) closed(within time.Duration) (websocket.StatusCode, string, []map[string]any, time.Duration) {
	w.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var events []map[string]any
	for {
		_, b, err := w.c.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				w.t.Fatalf("after %v the connection was not closed by the gateway: %v", time.Since(start), err)
			}
			return ce.Code, ce.Reason, events, time.Since(start)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		events = append(events, m)
	}
}

// TestResponsesWebSocketFollowsKeyChanges: every turn on an open Responses
// WebSocket is admitted as an HTTP request would be now. Two instances
// share one PostgreSQL; each key's connection is on instance B, every
// change is made through instance A. An archived key or an archived
// workspace closes the connection with 1008 within 2 s; a budget set to
// 0 or an allow-list without the model refuses the next turn.
func TestResponsesWebSocketFollowsKeyChanges(t *testing.T) {
	dsn, _, _ := freshSchema(t)
	up := startUpstreams(t, fakes.Options{})
	cfg := gatewayConfig{models: up.pricedModels(), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + dsn.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)

	open := func(t *testing.T, key string) *wsClient {
		t.Helper()
		waitStatus(t, b, key, "oa", 200)
		w := dialResponsesWS(t, b, key)
		if m, err := w.turn("oa"); err != nil || m["type"] != "response.completed" {
			t.Fatalf("first turn: %v %v", m, err)
		}
		return w
	}
	change := func(t *testing.T, path, body string) {
		t.Helper()
		if status, _, out := a.do(t, "POST", path, adminKey, body); status != 200 {
			t.Fatalf("POST %s: %d %s", path, status, out)
		}
	}
	wantClosed := func(t *testing.T, w *wsClient, want string) {
		t.Helper()
		code, reason, events, took := w.closed(5 * time.Second)
		if code != websocket.StatusPolicyViolation || !strings.Contains(reason, want) {
			t.Errorf("closed with %d %q, want 1008 naming %q", code, reason, want)
		}
		if took > 2*time.Second {
			t.Errorf("closed %v after the change on the other instance, want within 2s", took)
		}
		if len(events) == 0 || events[len(events)-1]["type"] != "error" {
			t.Errorf("no error event before the close: %v", events)
		}
		t.Logf("closed %v after the change on the other instance: %d %q", took, code, reason)
		if _, err := w.turn("oa"); err == nil {
			t.Error("a turn was served after the close")
		}
	}
	// refused polls turns until one is refused with status, for at most
	// 2 s: the time a change may take to reach B.
	refused := func(t *testing.T, w *wsClient, status float64) map[string]any {
		t.Helper()
		start := time.Now()
		for {
			m, err := w.turn("oa")
			if err != nil {
				t.Fatalf("the connection ended: %v", err)
			}
			if m["type"] == "error" {
				if m["status"] != status {
					t.Fatalf("refused with %v, want %v: %v", m["status"], status, m)
				}
				return m
			}
			if time.Since(start) > 2*time.Second {
				t.Fatalf("after 2s a turn is still served: %v", m)
			}
		}
	}

	t.Run("key archived", func(t *testing.T) {
		k := createKey(t, a, `{"name":"ws-archived"}`)
		w := open(t, k.Value)
		change(t, "/v1/organizations/api_keys/"+k.ID, `{"status":"archived"}`)
		wantClosed(t, w, "archived")
	})
	t.Run("key inactive", func(t *testing.T) {
		k := createKey(t, a, `{"name":"ws-inactive"}`)
		w := open(t, k.Value)
		change(t, "/v1/organizations/api_keys/"+k.ID, `{"status":"inactive"}`)
		wantClosed(t, w, "inactive")
	})
	t.Run("budget 0", func(t *testing.T) {
		k := createKey(t, a, `{"name":"ws-budget"}`)
		w := open(t, k.Value)
		change(t, "/v1/organizations/api_keys/"+k.ID, `{"budget":{"amount":"0","period":"monthly"}}`)
		refused(t, w, 429)
		// The connection stays open for what the key may still do.
		if m, err := w.turn("echo"); err != nil || m["type"] != "response.completed" {
			t.Errorf("a free model after the budget's refusal: %v %v", m, err)
		}
	})
	t.Run("models narrowed", func(t *testing.T) {
		k := createKey(t, a, `{"name":"ws-models"}`)
		w := open(t, k.Value)
		change(t, "/v1/organizations/api_keys/"+k.ID, `{"models":["echo"]}`)
		m := refused(t, w, 403)
		if !strings.Contains(string(mustJSON(m)), "may not use model") {
			t.Errorf("refusal: %v", m)
		}
	})
	t.Run("workspace archived", func(t *testing.T) {
		status, _, out := a.do(t, "POST", "/v1/organizations/workspaces", adminKey, `{"name":"ws-team"}`)
		var ws struct {
			ID string `json:"id"`
		}
		if status != 200 || json.Unmarshal(out, &ws) != nil {
			t.Fatalf("create workspace: %d %s", status, out)
		}
		k := createKey(t, a, `{"name":"ws-in-team","workspace_id":"`+ws.ID+`"}`)
		w := open(t, k.Value)
		change(t, "/v1/organizations/workspaces/"+ws.ID+"/archive", "")
		wantClosed(t, w, "archived")
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
