package handlers

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/handlers/responses"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// Responses over a WebSocket is the transport Codex prefers when its
// provider sets supports_websockets: it upgrades GET /v1/responses (with
// OpenAI-Beta: responses_websockets=…), sends each turn as one text frame
// {"type":"response.create", …the Responses request body…} and reads the
// turn's stream events back as one text frame each, up to
// response.completed. Every turn is served by the HTTP path itself, on a
// call built from the upgrade's headers and the key identified again per
// turn, so auth, limits, budgets, fallbacks, stored state and the ledger
// are those of HTTP; the ledger says responses_websocket for the endpoint.
//
// A connection remembers its last turn: Codex sends the next turn as
// previous_response_id plus only the new items, even with store: false,
// and the connection supplies the history as OpenAI's does.

// isWebSocketUpgrade reports whether r asks to switch to a WebSocket.
func isWebSocketUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

// serveResponsesWebSocket serves one Responses WebSocket connection until
// the client closes it, its key is refused or its lifetime ends.
func (g *Gateway) serveResponsesWebSocket(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		// Codex offers permessage-deflate; its events compress well. An
		// inflated message is bounded as a decoded body is: the read
		// limit counts inflated bytes, and readBounded takes them from
		// the body memory as they arrive. Without context takeover the
		// compressor (1.2 MB) and inflater (40 KB) are pooled and held
		// only while a message is written or read; with it, every open
		// connection, idle or not, would keep its own compressor outside
		// any bound.
		CompressionMode: websocket.CompressionNoContextTakeover,
	})
	if err != nil {
		// Accept has answered the client already.
		return
	}
	defer c.CloseNow()
	// One byte past the body limit reaches readBounded, which answers
	// 413 for it; the library closes with 1009 only past that.
	c.SetReadLimit(g.maxBody() + 1)
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	conn := &wsConn{g: g, c: c, caller: callerOf(r, providers.FormatResponses), call: callOf(r, providers.FormatResponses)}
	conn.call.Endpoint = ledger.EndpointResponsesWebSocket
	conn.call.Client = conn.call.Client.Clone()
	defer conn.forget()
	go conn.watch(ctx, g.opts.WebSocketLifetime)
	for {
		req, ok := conn.readMessage(ctx)
		if !ok {
			return
		}
		if req == nil {
			continue
		}
		open := conn.serveMessage(ctx, req.body, req.held)
		g.releaseRequest(req)
		if !open {
			return
		}
	}
}

// readMessage reads one text frame into body memory, as an HTTP body is
// read. It returns nil and true for a message answered with an error
// event, and false when the connection is done.
func (conn *wsConn) readMessage(ctx context.Context) (*clientRequest, bool) {
	g, c := conn.g, conn.c
	typ, rd, err := c.Reader(ctx)
	if err != nil {
		return nil, false
	}
	if typ != websocket.MessageText {
		conn.close(websocket.StatusUnsupportedData, "send each request as a JSON text frame")
		return nil, false
	}
	req := &clientRequest{buf: g.bodyPool.Get().(*[]byte)}
	apiErr := g.readBounded(ctx, rd, minBodyBuffer, "", req)
	if apiErr == nil {
		// The copies a turn is built from count too, until it ends.
		extra := wsTurnCopies * int64(len(req.body))
		if !g.bodyMem.acquire(ctx, extra, g.now().Add(g.opts.BodyMemoryWait)) {
			g.releaseRequest(req)
			return nil, g.wsAPIError(ctx, c, &providers.APIError{Status: http.StatusServiceUnavailable, Code: "body_memory_full", Message: g.memoryFull}) == nil
		}
		req.held += extra
		return req, true
	}
	g.releaseRequest(req)
	switch {
	case errors.Is(ctx.Err(), context.Canceled), apiErr.Status == http.StatusBadRequest:
		// The connection failed while the message came.
		return nil, false
	case apiErr.Status == http.StatusRequestEntityTooLarge:
		conn.close(websocket.StatusMessageTooBig, "message larger than max_request_body ("+strconv.FormatInt(g.maxBody(), 10)+" bytes, inflated)")
		return nil, false
	}
	// No body memory: the rest of the message is skipped, not kept, and
	// the client told to send it again, as an HTTP client is with 503.
	if _, err := io.Copy(io.Discard, rd); err != nil {
		return nil, false
	}
	return nil, g.wsAPIError(ctx, c, apiErr) == nil
}

// serveMessage answers one message; it reports whether the connection is
// still open.
func (conn *wsConn) serveMessage(ctx context.Context, data []byte, held int64) bool {
	g, c := conn.g, conn.c
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return g.wsError(ctx, c, http.StatusBadRequest, "invalid_request_error", "each frame must be a JSON object: "+err.Error()) == nil
	}
	switch head.Type {
	case "response.create":
		// The turn's working set is bounded beside all this connection
		// holds while it runs: the message and the history kept from the
		// last turn, which only this connection can give back.
		tctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if !conn.beginTurn(cancel) {
			return false
		}
		ok := g.wsTurn(ctx, tctx, conn, held+conn.lastHeld, data)
		return conn.endTurn() && ok
	case "response.processed":
		// Codex acknowledges a finished turn; nothing to do.
		return true
	}
	return g.wsError(ctx, c, http.StatusBadRequest, "invalid_request_error",
		"unknown frame type "+strconv.Quote(head.Type)+"; send {\"type\":\"response.create\", ...the Responses request body}") == nil
}

// maxBody is the largest request body the gateway reads.
func (g *Gateway) maxBody() int64 {
	if g.opts.MaxRequestBody > 0 {
		return g.opts.MaxRequestBody
	}
	return 32 << 20
}

// wsError sends an error event the way OpenAI's WebSocket does: the HTTP
// status it would have had, and the error object.
func (g *Gateway) wsError(ctx context.Context, c *websocket.Conn, status int, typ, msg string) error {
	b, _ := json.Marshal(map[string]any{"type": "error", "status": status,
		"error": map[string]any{"type": typ, "message": msg}})
	return c.Write(ctx, websocket.MessageText, b)
}

// wsAPIError sends e as the error event its HTTP answer would be: the
// OpenAI type of its status and its code, which a client branches on
// (body_memory_full is retried, request_too_large is not).
func (g *Gateway) wsAPIError(ctx context.Context, c *websocket.Conn, e *providers.APIError) error {
	detail := map[string]any{"type": apierror.OpenAIType(e.Status), "message": e.Message}
	if e.Code != "" {
		detail["code"] = e.Code
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "status": e.Status, "error": detail})
	return c.Write(ctx, websocket.MessageText, b)
}

// wsTurn serves one response.create frame through the core, as the key is
// admitted now, and sends its events back on ctx, the connection's; tctx
// is the turn's, held the body memory the connection holds while it
// runs. It reports whether the connection is still usable.
func (g *Gateway) wsTurn(ctx, tctx context.Context, conn *wsConn, held int64, data []byte) bool {
	c := conn.c
	id, refusal := conn.caller.identify()
	if refusal != nil {
		conn.refuse(ctx, refusal)
		return false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return g.wsError(ctx, c, http.StatusBadRequest, "invalid_request_error", "response.create: "+err.Error()) == nil
	}
	delete(fields, "type")
	if string(fields["background"]) == "true" {
		// A WebSocket turn is its stream; a background response is
		// created with POST /v1/responses.
		return g.wsError(ctx, c, http.StatusBadRequest, "invalid_request_error",
			"background: true is not served over the WebSocket; POST /v1/responses with background: true, then GET /v1/responses/{id}") == nil
	}
	fields["stream"] = json.RawMessage("true")
	input := inputItems(fields["input"])
	if raw, ok := fields["previous_response_id"]; ok {
		var prev string
		if json.Unmarshal(raw, &prev) == nil && prev != "" && prev == conn.lastID {
			if conn.lastLost != nil {
				return g.wsAPIError(ctx, c, conn.lastLost) == nil
			}
			// The connection holds this history; a store: false turn is
			// in no store.
			delete(fields, "previous_response_id")
			input = append(append([]json.RawMessage(nil), conn.lastItems...), input...)
		}
	}
	if raw, ok := fields["generate"]; ok {
		delete(fields, "generate")
		if string(raw) == "false" {
			return g.wsWarmup(ctx, conn, fields, input)
		}
	}
	if input != nil {
		fields["input"], _ = json.Marshal(input)
	}
	body, _ := json.Marshal(fields)

	tctx, cancel := context.WithCancel(tctx)
	defer cancel()
	call := conn.call
	call.Identity, call.Body, call.carrierHeld = id, body, held

	ew := &wsSink{ctx: ctx, c: c, header: http.Header{}, cancel: cancel}
	g.Serve(tctx, &call, ew)
	if ew.werr != nil {
		return false
	}
	if ew.status != 0 && ew.status != http.StatusOK {
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(ew.body.Bytes(), &e)
		if e.Error == nil {
			e.Error, _ = json.Marshal(map[string]string{"type": "api_error", "message": strings.TrimSpace(ew.body.String())})
		}
		b, _ := json.Marshal(map[string]any{"type": "error", "status": ew.status, "error": e.Error})
		return c.Write(ctx, websocket.MessageText, b) == nil
	}
	ew.flushEvents(true)
	if ew.completed != nil {
		var done struct {
			Response struct {
				ID     string            `json:"id"`
				Output []json.RawMessage `json:"output"`
			} `json:"response"`
		}
		if json.Unmarshal(ew.completed, &done) == nil && done.Response.ID != "" {
			conn.remember(done.Response.ID, append(input, done.Response.Output...))
		}
	}
	return ew.werr == nil
}

// inputItems is a Responses input as a list of items: a bare string is one
// user message.
func inputItems(raw json.RawMessage) []json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b, _ := json.Marshal(map[string]any{"type": "message", "role": "user",
			"content": []map[string]string{{"type": "input_text", "text": s}}})
		return []json.RawMessage{b}
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	return items
}

// wsSink is where a WebSocket turn is answered: a stream's events go out
// as text frames as they come; any other answer (an error) is kept for
// wsTurn to send as an error event.
type wsSink struct {
	ctx       context.Context
	c         *websocket.Conn
	header    http.Header
	status    int
	body      bytes.Buffer // an answer that is not a stream
	events    responses.Events
	completed []byte // the response.completed event's data
	werr      error
	cancel    context.CancelFunc
}

func (e *wsSink) Header() http.Header { return e.header }

func (e *wsSink) Start(code int) {
	if e.status == 0 {
		e.status = code
	}
}

// Fail keeps the error for wsTurn's error event, in the Responses
// family its HTTP answer would have.
func (e *wsSink) Fail(err *apierror.Error) {
	if e.status != 0 {
		return
	}
	e.status = err.Status
	e.body.Write(err.Body(providers.FormatResponses))
}

func (e *wsSink) stream() bool {
	return e.status == http.StatusOK && strings.HasPrefix(e.header.Get("Content-Type"), "text/event-stream")
}

func (e *wsSink) Write(p []byte) error {
	if e.status == 0 {
		e.Start(http.StatusOK)
	}
	if e.werr != nil {
		return e.werr
	}
	if !e.stream() {
		e.body.Write(p)
		return nil
	}
	e.events.Add(p)
	e.flushEvents(false)
	return e.werr
}

// Flush only reports a failed send: the events are sent as they are
// written.
func (e *wsSink) Flush() error { return e.werr }

// flushEvents sends every whole SSE event in pending as a frame of its
// data; at the end the rest is sent too.
func (e *wsSink) flushEvents(final bool) {
	for e.werr == nil {
		data, ok := e.events.Next(final)
		if !ok {
			return
		}
		if bytes.Contains(data[:min(len(data), 64)], []byte(`"response.completed"`)) {
			e.completed = append([]byte(nil), data...)
		}
		if err := e.c.Write(e.ctx, websocket.MessageText, data); err != nil {
			e.werr = errors.Join(errors.New("websocket client gone"), err)
			// The client has gone: the turn ends as an HTTP client's
			// would, cancelled.
			e.cancel()
		}
	}
}

// wsWarmup answers a response.create with generate: false, Codex's
// prewarm of a new connection: the input is remembered as a finished,
// empty response the next turn continues with previous_response_id.
// Nothing goes upstream, so nothing is spent or recorded.
func (g *Gateway) wsWarmup(ctx context.Context, conn *wsConn, fields map[string]json.RawMessage, input []json.RawMessage) bool {
	c := conn.c
	var model string
	_ = json.Unmarshal(fields["model"], &model)
	id := "resp_" + strings.ToLower(rand.Text())
	resp := map[string]any{"id": id, "object": "response", "created_at": g.now().Unix(), "model": model,
		"status": "in_progress", "output": []any{}}
	created, _ := json.Marshal(map[string]any{"type": "response.created", "sequence_number": 0, "response": resp})
	resp["status"] = "completed"
	resp["usage"] = map[string]any{"input_tokens": 0, "output_tokens": 0, "total_tokens": 0,
		"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}
	completed, _ := json.Marshal(map[string]any{"type": "response.completed", "sequence_number": 1, "response": resp})
	for _, b := range [][]byte{created, completed} {
		if c.Write(ctx, websocket.MessageText, b) != nil {
			return false
		}
	}
	conn.remember(id, input)
	return true
}
