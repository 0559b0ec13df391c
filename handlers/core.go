package handlers

// The transport-free core: every way in (the HTTP door, a Responses
// WebSocket turn, a background run, compact, a cloud envelope) builds a
// Call and a Sink and hands both to the core, which admits, dispatches,
// relays and records the call without knowing how it came or where its
// answer goes.

import (
	"context"
	"net/http"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/upstream"
)

// Call is one request for a model as the core serves it, whichever way it
// came in.
type Call struct {
	// Format is the client's wire format: how the body is read, the
	// answer written and an error rendered.
	Format providers.Format
	// Endpoint is what the usage record names (ledgerEndpoints[Format]
	// unless the way in is its own: a cloud envelope, a WebSocket).
	Endpoint ledger.Endpoint
	// Identity is the caller as admitted for this call; nil on a gateway
	// without llm_auth.
	Identity *policy.Identity
	// Body is the request body, for a way in that holds it already; the
	// core copies it into a buffer counted in the body memory. The HTTP
	// door leaves it nil and the core reads the request's own body.
	Body []byte
	// Client is what an upstream request carries on from the client's:
	// its query, Anthropic version and betas, trace context.
	Client upstream.ClientMeta
	// Session is what the client's headers say of its session and agent.
	Session SessionHints
	// Model and Action are what the URL names: a Gemini call's model and
	// action, a Converse call's model id and operation.
	Model, Action string
	// Codex says the caller is Codex (its originator header), whose
	// Responses parser drops a refusal part it cannot read.
	Codex bool

	// source reads the body when Body is nil: the HTTP door's request.
	source bodySource
	// caller identifies the key again for a call that outlives its
	// admission (a background response's run).
	caller caller
	// carrierHeld is the body memory the carrier of the call (a
	// WebSocket connection) holds while it runs.
	carrierHeld int64
	// run is set on a background response's own run.
	run *bgRun
	// req is the body's buffer and the body memory it holds while the
	// core serves the call (readRequest, releaseRequest).
	req clientRequest
}

// SessionHints is what a request's headers say of its coding-agent
// session, read by the door so the core needs no headers
// (resolveSession: the body and the parsed request come after).
type SessionHints struct {
	// ClaudeCode is X-Claude-Code-Session-Id, which wins over everything.
	ClaudeCode string
	// Header is the first valid generic session header (Codex's,
	// opencode's, X-Session-Id…), which wins over a Responses
	// prompt_cache_key.
	Header string
	// Agent names the client from its originator or User-Agent.
	Agent string
	// Repo and Branch are the work context a client without hooks sends
	// (X-Modelgate-Repo, already cleaned by llm_auth, and
	// X-Modelgate-Branch).
	Repo, Branch string
}

// Sink is where the core writes a call's answer: the HTTP door's
// ResponseWriter, a WebSocket's frames, a background run's event log, a
// buffer for compact. The core sets Header before Start, writes and
// flushes after it, and on a refusal before any of that calls Fail, which
// renders the error in the family the call's client reads.
type Sink interface {
	// Header is the answer's header, set before Start.
	Header() http.Header
	// Start begins the answer with status and the header.
	Start(status int)
	// Write writes answer bytes (a whole body, or stream events); an
	// error means the client is gone.
	Write(p []byte) error
	// Flush sends what was written; an error means the client is gone.
	Flush() error
	// Fail answers the call with e instead of an answer, in its
	// client's error family. After Start it does nothing.
	Fail(e *apierror.Error)
}

// bodySource reads a call's body into req, bounded and counted as every
// client body is (readBody).
type bodySource interface {
	readBody(g *Gateway, req *clientRequest) *apierror.Error
}

// Serve serves c and writes its answer to out: the entry for every way in
// but the HTTP door (whose guard already catches a panic). A panic is
// logged and answered as a 500 in the call's family, as the door's guard
// does.
func (g *Gateway) Serve(ctx context.Context, c *Call, out Sink) {
	defer func() {
		if v := recover(); v != nil {
			out.Fail(g.panicked(v))
		}
	}()
	g.serve(ctx, c, out)
}

// recordEndpoint is the endpoint c's usage record names.
func (c *Call) recordEndpoint() ledger.Endpoint {
	if c.Endpoint != "" {
		return c.Endpoint
	}
	return ledgerEndpoints[c.Format]
}
