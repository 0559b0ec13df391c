package identity

import (
	"crypto/hmac"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/mcp/approval"
	"github.com/modelgate/modelgate/policy"
)

// The dashboard's session: a signed-in person sealed into a cookie, so no
// instance keeps it, checked against the sign-outs every instance reads
// from the ledger (policy.Controls.SignedOut).

// session is a signed-in person, kept sealed in the browser.
type session struct {
	ID      string    `json:"i"`
	Person  Person    `json:"p"`
	Expires time.Time `json:"e"`
}

// logout ends the dashboard session on every instance: its id goes into
// the ledger with its expiry (policy.Controls.SignOut), which every
// instance's control poll reads, a restarted one included.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	s, state := h.currentSession(r)
	if state == sessionNone {
		http.SetCookie(w, h.cookie(r, sessionCookie, "", "/", time.Time{}))
		writeJSON(w, http.StatusOK, map[string]any{"signed_out": true})
		return
	}
	if !h.csrfOK(r, s) {
		fail(w, http.StatusForbidden, "permission_error", "X-CSRF-Token: missing or wrong; read csrf_token from GET /v1/me")
		return
	}
	if h.controls == nil || h.controls.SignOut(r.Context(), s.ID, s.Expires) != nil {
		// The cookie stays: the person can retry, and is not told they
		// are signed out while the session still works elsewhere.
		w.Header().Set("Retry-After", "5")
		fail(w, http.StatusServiceUnavailable, "api_error", "the sign-out could not be recorded in the gateway's ledger database, so the session would still work on other instances; retry")
		return
	}
	now := h.now()
	http.SetCookie(w, h.cookie(r, sessionCookie, "", "/", time.Time{}))
	h.record(r.Context(), AuditEvent{Time: now.UTC(), Actor: s.Person.ID(), Action: "oidc.signout", Source: source(r)})
	out := map[string]any{"signed_out": true}
	if p, err := h.provider(r.Context()); err == nil {
		var extra struct {
			EndSession string `json:"end_session_endpoint"`
		}
		if p.Claims(&extra) == nil && extra.EndSession != "" {
			out["end_session_endpoint"] = extra.EndSession
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// sessionState is what a request's session cookie is worth.
type sessionState int

const (
	sessionNone    sessionState = iota // absent, forged, expired or signed out
	sessionOK                          // a live session
	sessionUnknown                     // live, but the sign-outs are not read yet (the ledger is opening)
)

func (h *Handler) currentSession(r *http.Request) (session, sessionState) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, sessionNone
	}
	var s session
	if h.seal.open(sessionCookie, c.Value, &s) != nil || !h.now().Before(s.Expires) {
		return session{}, sessionNone
	}
	if h.controls == nil {
		return s, sessionOK
	}
	switch out, loaded := h.controls.SignedOut(s.ID); {
	case out:
		return session{}, sessionNone
	case !loaded:
		return s, sessionUnknown
	}
	return s, sessionOK
}

func (h *Handler) csrfOK(r *http.Request, s session) bool {
	got := r.Header.Get("X-CSRF-Token")
	return got != "" && hmac.Equal([]byte(got), []byte(h.seal.csrf(s.ID)))
}

// sessionPath reports what a dashboard session may call: the person's
// own view and the admin API. Model calls need a key.
func sessionPath(p string) bool {
	return p == MePath || p == "/v1/organizations" || strings.HasPrefix(p, "/v1/organizations/") || strings.HasPrefix(p, policy.SpendLinkPath) || strings.HasPrefix(p, policy.MCPConnectPath) ||
		strings.HasPrefix(p, approval.Path)
}

// signInFirst sends a browser opening a person's MCP connect page or link
// without a session to sign in, and back (handled true); other requests
// go on to the key check.
func (h *Handler) signInFirst(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, policy.MCPConnectPath) || r.Method != http.MethodGet {
		return false
	}
	http.Redirect(w, r, prefix+"login?return="+url.QueryEscape(r.URL.RequestURI()), http.StatusFound)
	return true
}

// Authenticate reads a dashboard session from a request that presented
// no key. It returns the caller for the admin API, or handled when it
// answered the request itself (GET /v1/me, a refusal). A request whose
// cookie is absent, or that is not for the admin API, is left alone
// (nil, false): llm_auth then asks for a key as before, so a session can
// never stand in the way of a key.
func (h *Handler) Authenticate(w http.ResponseWriter, r *http.Request) (id *policy.Identity, handled bool) {
	if !sessionPath(r.URL.Path) {
		return nil, false
	}
	if _, err := r.Cookie(sessionCookie); err != nil {
		return nil, h.signInFirst(w, r)
	}
	s, state := h.currentSession(r)
	switch state {
	case sessionNone:
		if h.signInFirst(w, r) {
			return nil, true
		}
		http.SetCookie(w, h.cookie(r, sessionCookie, "", "/", time.Time{}))
		fail(w, http.StatusUnauthorized, "authentication_error", "your sign-in session has ended (it lasts as long as the identity provider's ID token, and ends on sign-out); sign in again")
		return nil, true
	case sessionUnknown:
		w.Header().Set("Retry-After", "2")
		fail(w, http.StatusServiceUnavailable, "api_error", "the gateway is still reading its ledger database, where sign-outs are kept; retry in a moment")
		return nil, true
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !h.csrfOK(r, s) {
		fail(w, http.StatusForbidden, "permission_error", "X-CSRF-Token: missing or wrong; a signed-in session's "+r.Method+" must carry the csrf_token GET /v1/me answers")
		return nil, true
	}
	grant, refusal := h.grantFor(r.Context(), s.Person)
	if refusal != "" {
		fail(w, http.StatusForbidden, "permission_error", refusal)
		return nil, true
	}
	keyLimits, budget := grant.Split()
	id = &policy.Identity{KeyID: s.Person.ID(), Workspace: grant.Workspace, Role: grant.Role.Policy(), Limits: keyLimits,
		Person: s.Person.ID(), OwnKeys: h.ownKeys(s.Person.ID()), Groups: ledger.GroupLines(grant.Matched), PersonBudget: budget,
		Subject: s.Person.StableID()}
	if grant.Models != nil {
		id.Models = map[string]struct{}{}
		for _, m := range grant.Models {
			id.Models[m] = struct{}{}
		}
	}
	if r.URL.Path == MePath {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			fail(w, http.StatusMethodNotAllowed, "", "method "+r.Method+" not allowed on /v1/me; use GET")
			return nil, true
		}
		// A grant without a models list allows every alias: null, not []
		// (which read as "nothing allowed").
		models := grant.Models
		var ws *string
		if grant.Workspace != "" {
			ws = &grant.Workspace
		}
		h.mu.Lock()
		budgets := h.budgets
		h.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"id": s.Person.ID(), "type": "person", "email": s.Person.Email,
			"subject": s.Person.Subject, "groups": s.Person.Groups, "role": string(grant.Role), "workspace_id": ws,
			"models": models, "csrf_token": h.seal.csrf(s.ID), "expires_at": s.Expires.UTC().Format(time.RFC3339),
			"budgets": budgets.Status(id, h.controls.WorkspaceLimits(grant.Workspace), "")})
		return nil, true
	}
	return id, false
}

// ownKeys are the ids of the keys minted for person.
func (h *Handler) ownKeys(person string) []string {
	if h.controls == nil {
		return nil
	}
	keys, _ := h.controls.Runtime()
	var out []string
	for _, k := range keys {
		if k.CreatedBy != nil && k.CreatedBy.Type == "oidc" && k.CreatedBy.ID == person {
			out = append(out, k.ID)
		}
	}
	return out
}
