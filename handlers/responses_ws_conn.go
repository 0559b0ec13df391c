package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// A Responses WebSocket outlives the request that opened it, so the
// caller it was admitted as is not trusted for its life: every turn
// identifies the key again through the resolver llm_auth authenticated
// the upgrade with (the path every HTTP request takes, against the
// current snapshot of runtime keys), and a watcher closes the connection
// (1008) as soon as that snapshot, or the key's expiry, refuses the key.
// The snapshot is polled every second on each instance, so a key revoked
// or archived, or a workspace archived, on any instance closes the
// connections of every instance within about a second, with no database
// query per turn or per connection.
//
// Caddyfile keys, their budgets and models, and the models file change
// only by a config reload, which builds a new llm_auth and llm_gateway;
// the resolver and gateway a connection was admitted by keep answering
// as the old config did. So when Caddy cleans the old gateway up, each of
// its connections is closed with 1012 (Service Restart) as soon as its
// turn in progress ends, and the client reconnects under the new config.

// DefaultWebSocketLifetime is how long a Responses WebSocket stays open
// when GatewayOptions.WebSocketLifetime is 0. Codex opens a new
// connection when one closes, so a bound costs a reconnect, and it bounds
// how long anything a turn does not re-check could outlive a change.
const DefaultWebSocketLifetime = time.Hour

// wsConn is one Responses WebSocket connection: who is on it, whether a
// turn is being served, and its memory of its last turn.
type wsConn struct {
	g      *Gateway
	c      *websocket.Conn
	caller caller
	// call is every turn's call as the upgrade makes it: its client
	// headers and session; each turn sets its own identity and body.
	call Call

	mu sync.Mutex
	// cancelTurn cancels the turn being served; nil between turns. The
	// connection's own context stays alive for its reads and writes: a
	// write on a cancelled context drops the connection without a close
	// frame.
	cancelTurn context.CancelFunc
	// retired: the lifetime ended or the config was replaced; close with
	// retireCode and retireReason when the turn in progress ends.
	retired      bool
	retireCode   websocket.StatusCode
	retireReason string
	closed       bool

	lastID    string
	lastItems []json.RawMessage // the last turn's whole input, then its output
	// lastHeld is the body memory lastItems holds; lastLost says why the
	// last turn (lastID) was not kept, to its continuation.
	lastHeld int64
	lastLost *providers.APIError
}

// remember keeps the last turn, for a next turn that continues it with
// previous_response_id. What a connection keeps between turns is body
// memory too, and a next turn carrying more than max_request_body would be
// refused anyway, so a larger history, or one the body memory has no room
// for, is not kept and its continuation is told why.
func (conn *wsConn) remember(id string, items []json.RawMessage) {
	conn.forget()
	conn.lastID = id
	var size int64
	for _, it := range items {
		size += int64(len(it)) + 1
	}
	g := conn.g
	switch {
	case size > g.maxBody():
		conn.lastLost = &providers.APIError{Status: http.StatusRequestEntityTooLarge, Code: "request_too_large",
			Message: "the conversation up to " + id + " is larger than max_request_body, so this connection did not keep it; start a new conversation or compact it"}
	case !g.bodyMem.acquire(context.Background(), size, g.now().Add(g.opts.BodyMemoryWait)):
		conn.lastLost = &providers.APIError{Status: http.StatusServiceUnavailable, Code: "body_memory_full",
			Message: "the gateway had no body memory to keep the conversation up to " + id + " on this connection; send the whole conversation as input"}
	default:
		conn.lastItems, conn.lastHeld = items, size
	}
}

// forget drops the last turn and gives its body memory back.
func (conn *wsConn) forget() {
	conn.g.bodyMem.release(conn.lastHeld)
	conn.lastID, conn.lastItems, conn.lastHeld, conn.lastLost = "", nil, 0, nil
}

// watch closes the connection when its key is refused (revoked, archived,
// expired, its workspace archived), its lifetime ends or its gateway's
// config is replaced; it returns when ctx ends.
func (conn *wsConn) watch(ctx context.Context, lifetime time.Duration) {
	life := time.NewTimer(lifetime)
	defer life.Stop()
	for {
		// Taken before identifying, so a change in between is not missed.
		changed := conn.caller.changed()
		id, refusal := conn.caller.identify()
		if refusal != nil {
			conn.refuse(ctx, refusal)
			return
		}
		if !conn.waitChange(ctx, id, changed, life.C, lifetime) {
			return
		}
	}
}

// waitChange waits for what makes the watcher look at the key again: a
// change of the keys in force or id's expiry (true), or for the end of
// the connection, its lifetime or its config (false). Its expiry timer is
// stopped here, once per wake, not deferred to the watcher's end: the
// watcher wakes on every control change on any instance for as long as
// the connection lives.
func (conn *wsConn) waitChange(ctx context.Context, id *policy.Identity, changed <-chan struct{}, life <-chan time.Time, lifetime time.Duration) bool {
	var expiry <-chan time.Time
	if id != nil && !id.Expires.IsZero() {
		if d := time.Until(id.Expires); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			expiry = t.C
		}
	}
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	case <-expiry:
	case <-life:
		conn.retire(websocket.StatusNormalClosure, "connection open for its maximum lifetime ("+lifetime.String()+"); open a new one")
		return false
	case <-conn.g.retired:
		conn.retire(websocket.StatusServiceRestart, "the gateway's configuration was reloaded; open a new connection")
		return false
	}
	return true
}

// beginTurn marks a turn in progress, cancelled by cancel when the
// connection is refused; false when the connection is closing.
func (conn *wsConn) beginTurn(cancel context.CancelFunc) bool {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if conn.closed || conn.retired {
		return false
	}
	conn.cancelTurn = cancel
	return true
}

// endTurn marks the turn done and closes a connection whose lifetime
// ended while it ran; it reports whether the connection is still open.
func (conn *wsConn) endTurn() bool {
	conn.mu.Lock()
	conn.cancelTurn = nil
	open := !conn.closed
	retire := conn.retired && !conn.closed
	code, reason := conn.retireCode, conn.retireReason
	conn.mu.Unlock()
	if retire {
		conn.close(code, reason)
		return false
	}
	return open
}

// retire ends the connection with code and reason: at once when idle,
// else when its turn ends, so a turn is never cut by the lifetime or a
// reload, as an HTTP request in flight is not.
func (conn *wsConn) retire(code websocket.StatusCode, reason string) {
	conn.mu.Lock()
	conn.retired, conn.retireCode, conn.retireReason = true, code, reason
	idle := conn.cancelTurn == nil
	conn.mu.Unlock()
	if idle {
		conn.close(code, reason)
	}
}

// refuse tells the client why its key is refused, as the error event an
// HTTP request would have got, and closes the connection with 1008; a turn
// in progress is cancelled, as nothing more may be spent on this key.
func (conn *wsConn) refuse(ctx context.Context, refusal *providers.APIError) {
	conn.mu.Lock()
	if conn.closed {
		conn.mu.Unlock()
		return
	}
	if conn.cancelTurn != nil {
		conn.cancelTurn()
	}
	conn.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	_ = conn.g.wsError(wctx, conn.c, refusal.Status, refusalType(refusal), refusal.Message)
	cancel()
	conn.close(websocket.StatusPolicyViolation, refusal.Message)
}

// refusalType is the OpenAI error type of an authentication refusal.
func refusalType(e *providers.APIError) string {
	if e.Status == http.StatusForbidden {
		return "permission_error"
	}
	return "authentication_error"
}

// close sends the close frame once; the reason is cut to the 123 bytes a
// close frame carries.
func (conn *wsConn) close(code websocket.StatusCode, reason string) {
	conn.mu.Lock()
	if conn.closed {
		conn.mu.Unlock()
		return
	}
	conn.closed = true
	conn.mu.Unlock()
	if len(reason) > maxCloseReason {
		reason = strings.ToValidUTF8(reason[:maxCloseReason], "")
	}
	_ = conn.c.Close(code, reason)
}

// maxCloseReason is the longest reason a close frame carries (RFC 6455
// §5.5: 125 bytes of payload, 2 of them the code).
const maxCloseReason = 123
