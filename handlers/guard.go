package handlers

import (
	"fmt"
	"net/http"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/providers"
)

// guard keeps a panic in a handler from reaching the server, which would
// drop the connection without a word: the client gets a 500 in family's
// error family (nil: its own) when nothing was sent yet, and the observer
// gets an attempt with Err "panic: ..." so the fault is logged.
func (g *Gateway) guard(family apierror.Audience, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				e := g.panicked(v)
				if !tw.wrote {
					e.Write(tw, g.familyOf(family, r))
				}
			}
		}()
		h(tw, r)
	}
}

// panicked logs the recovered panic v as an attempt, with Err "panic:
// ...", and is the 500 the client gets; http.ErrAbortHandler, net/http's
// own way to drop a connection, panics on.
func (g *Gateway) panicked(v any) *providers.APIError {
	if v == http.ErrAbortHandler {
		panic(v)
	}
	msg := fmt.Sprint(v)
	if len(msg) > 200 {
		msg = msg[:200]
	}
	g.obs.Attempt(Attempt{Err: "panic: " + msg})
	return &providers.APIError{Status: http.StatusInternalServerError,
		Message: "the gateway failed while handling this request; the fault is logged"}
}

// trackingWriter notes whether the response was started.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(p []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach Flush on the real writer.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
