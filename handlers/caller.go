package handlers

import (
	"net/http"

	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// caller is who presented what on a request that outlives its
// admission: a WebSocket's upgrade, a background response's create. What
// is served on it later identifies the key again, as an HTTP request
// presenting it would be identified now.
type caller struct {
	// res identifies the key again; nil when no llm_auth admitted the
	// request (a gateway with insecure_no_auth, or a test), when fixed is
	// the caller throughout.
	res    policy.Resolver
	secret string
	fixed  *policy.Identity
}

// callerOf is the caller of request r, a call in format cf: a Gemini
// call's key may be its ?key=.
func callerOf(r *http.Request, cf providers.Format) caller {
	res := policy.ResolverFrom(r.Context())
	if res == nil {
		return caller{fixed: policy.IdentityFrom(r.Context())}
	}
	return caller{res: res, secret: presentedKey(r, cf == providers.FormatGemini)}
}

// identify is the caller as an HTTP request presenting the same key would
// be admitted now, or its refusal.
func (w caller) identify() (*policy.Identity, *providers.APIError) {
	if w.res == nil {
		return w.fixed, nil
	}
	return w.res.Identify(w.secret)
}

// changed is closed when the keys in force may have changed.
func (w caller) changed() <-chan struct{} {
	if w.res == nil {
		return nil
	}
	return w.res.Changed()
}
