package handlers

// The HTTP door: the one adapter from net/http to the core. It builds a
// Call from the request (its format fixed by the route, its identity put
// in the context by llm_auth) and is the call's Sink and body source.

import (
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/upstream"
)

// httpDoor is one HTTP request on its way to the core: its call, and the
// ResponseWriter the answer goes to. One value per request, so the door
// adds no allocation of its own.
type httpDoor struct {
	call Call
	w    http.ResponseWriter
	r    *http.Request
	aud  apierror.Audience
	rc   http.ResponseController
}

// newHTTPDoor is the door for r, answering errors in aud's family.
func newHTTPDoor(w http.ResponseWriter, r *http.Request, cf providers.Format, aud apierror.Audience) *httpDoor {
	d := &httpDoor{w: w, r: r, aud: aud, rc: *http.NewResponseController(w)}
	d.call = callOf(r, cf)
	d.call.source = d
	return d
}

// callOf is the call r makes in format cf, without its body.
func callOf(r *http.Request, cf providers.Format) Call {
	c := Call{Format: cf, Identity: policy.IdentityFrom(r.Context()), Client: clientMeta(r),
		Session: sessionHints(r.Header), caller: callerOf(r),
		Codex: strings.HasPrefix(r.Header.Get("Originator"), "codex")}
	c.Model, c.Action, _ = geminiAction(r.URL.Path)
	return c
}

// clientMeta is what an upstream request takes from r: no copies, the
// header's own values.
func clientMeta(r *http.Request) upstream.ClientMeta {
	h := r.Header
	m := upstream.ClientMeta{Query: r.URL.RawQuery,
		AnthropicVersion: h.Values("Anthropic-Version"), AnthropicBeta: h.Values("Anthropic-Beta"),
		Traceparent: h.Values("Traceparent"), Tracestate: h.Values("Tracestate")}
	if upstream.HasSeatCredential(r.Context()) {
		m.Seat = upstream.SeatHeaders(h)
	}
	return m
}

// serveHTTP serves r as a call of format cf through the core.
func (g *Gateway) serveHTTP(w http.ResponseWriter, r *http.Request, cf providers.Format) {
	d := newHTTPDoor(w, r, cf, cf)
	g.serve(r.Context(), &d.call, d)
}

func (d *httpDoor) readBody(g *Gateway, req *clientRequest) *apierror.Error {
	return g.readBody(d.w, d.r, req)
}

func (d *httpDoor) Header() http.Header { return d.w.Header() }
func (d *httpDoor) Start(status int)    { d.w.WriteHeader(status) }
func (d *httpDoor) Flush() error        { return d.rc.Flush() }
func (d *httpDoor) Fail(e *apierror.Error) {
	e.Write(d.w, d.aud)
}

func (d *httpDoor) Write(p []byte) error {
	_, err := d.w.Write(p)
	return err
}

// httpSink is the door's sink alone, for an answer written outside the
// core (a stored response's replay).
func httpSink(w http.ResponseWriter, aud apierror.Audience) Sink {
	return &httpDoor{w: w, aud: aud, rc: *http.NewResponseController(w)}
}

// sinkJSON answers out with a whole JSON body, as writeJSON does an HTTP
// client.
func sinkJSON(out Sink, status int, body []byte) {
	out.Header().Set("Content-Type", "application/json")
	out.Start(status)
	_ = out.Write(body)
}
