package identity

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/modelgate/modelgate/ledger"
)

// The gateway as the authorization server of its MCP endpoints (the MCP
// authorization spec, 2025-06-18): protected resource metadata (RFC
// 9728), authorization server metadata (RFC 8414), dynamic client
// registration (RFC 7591), the authorization code grant with PKCE S256
// and refresh (OAuth 2.1), resource indicators (RFC 8707). The person
// signs in through the company's provider with the dashboard's code flow;
// the access token is a per-person key from the one minter, with the
// person's groups, limits and allow-lists.
//
// Nothing is stored: a registered client's id, an authorization code and
// a refresh token are sealed (AES-GCM, the cookies' key), so every
// instance that shares the client secret accepts them. A code and a
// refresh token are good once: their use is kept in the ledger database
// the instances share (ledger.GrantRedeemer).

// Paths of the authorization server; the well-known ones are the route
// table's (handlers/routes.go), the rest are under /auth/oidc/.
const (
	ProtectedResourcePath   = "/.well-known/oauth-protected-resource"
	AuthorizationServerPath = "/.well-known/oauth-authorization-server"
	RegisterPath            = "/auth/oidc/mcp/register"
	AuthorizePath           = "/auth/oidc/mcp/authorize"
	OAuthTokenPath          = "/auth/oidc/mcp/token"
	ConsentPath             = "/auth/oidc/mcp/consent"

	clientPurpose  = "mg_mcp_client"
	codePurpose    = "mg_mcp_code"
	refreshPurpose = "mg_mcp_refresh"
	consentPurpose = "mg_mcp_consent"
	// clientIDPrefix marks the gateway's sealed client ids.
	clientIDPrefix = "mgc_"
	codeTTL        = 2 * time.Minute
	// mcpKeyTTL caps an MCP client's key: short, since the client renews
	// it with its refresh token, and each renewal asks the provider and
	// the user directory again.
	mcpKeyTTL = time.Hour
	// refreshTTL is a refresh token's life when the provider gave one of
	// its own to renew with; without one the sign-in's session TTL bounds it.
	refreshTTL = 30 * 24 * time.Hour
)

// mcpAuthorization is an MCP client's authorization request, carried
// through the provider's sign-in in the sealed flow cookie.
type mcpAuthorization struct {
	ClientID  string `json:"c"`
	Name      string `json:"n,omitempty"`
	Redirect  string `json:"r"`
	State     string `json:"s,omitempty"`
	Challenge string `json:"x"`
	Resource  string `json:"t,omitempty"`
	Scope     string `json:"o,omitempty"`
}

// mcpGrant is a signed-in person's grant to one client: sealed as the
// consent form's field, then as the authorization code, then (without
// Redirect and Challenge) as the refresh token.
type mcpGrant struct {
	ID         string    `json:"i"`
	Person     Person    `json:"p"`
	IdPRefresh string    `json:"f,omitempty"`
	ClientID   string    `json:"c"`
	Redirect   string    `json:"r,omitempty"`
	State      string    `json:"s,omitempty"`
	Challenge  string    `json:"x,omitempty"`
	Resource   string    `json:"t,omitempty"`
	Scope      string    `json:"o,omitempty"`
	Expires    time.Time `json:"e"`
	// SignedIn bounds a grant the provider cannot renew (no refresh
	// token of its own): SessionTTL after it.
	SignedIn time.Time `json:"a"`
}

// origin is the gateway's scheme and host as clients reach it: the fixed
// redirect URL's when one is configured, else the request's.
func (h *Handler) origin(r *http.Request) string {
	if u, err := url.Parse(h.cfg.RedirectURL); h.cfg.RedirectURL != "" && err == nil {
		return u.Scheme + "://" + u.Host
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// Challenge tells an MCP client refused for want of a key where to sign
// in (RFC 9728 §5.1); llm_auth calls it for the route table's protected
// resources.
func (h *Handler) Challenge(w http.ResponseWriter, r *http.Request, presented bool) {
	v := fmt.Sprintf(`Bearer resource_metadata=%q`, h.origin(r)+ProtectedResourcePath+r.URL.EscapedPath())
	if presented {
		v += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", v)
}

// protectedResource is RFC 9728's metadata of the resource whose path
// follows the well-known name (the whole gateway for none).
func (h *Handler) protectedResource(w http.ResponseWriter, r *http.Request) {
	origin := h.origin(r)
	resource := origin + strings.TrimPrefix(r.URL.EscapedPath(), ProtectedResourcePath)
	writeJSON(w, http.StatusOK, map[string]any{
		"resource": resource, "authorization_servers": []string{origin},
		"bearer_methods_supported": []string{"header"}, "resource_name": "Modelgate MCP gateway",
	})
}

// authorizationServer is RFC 8414's metadata; the issuer is the origin.
func (h *Handler) authorizationServer(w http.ResponseWriter, r *http.Request) {
	origin := h.origin(r)
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer": origin, "authorization_endpoint": origin + AuthorizePath, "token_endpoint": origin + OAuthTokenPath,
		"registration_endpoint": origin + RegisterPath, "response_types_supported": []string{"code"},
		"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"}, "scopes_supported": []string{"mcp", "offline_access"},
		"authorization_response_iss_parameter_supported": true,
	})
}

// register is dynamic client registration: the client's metadata, once
// checked, is sealed into its id, so nothing is stored.
func (h *Handler) register(w http.ResponseWriter, r *http.Request) {
	reg, oerr := decodeRegistration(http.MaxBytesReader(w, r.Body, maxRegistration))
	if oerr != nil {
		oerr.write(w)
		return
	}
	sealed, err := h.seal.seal(clientPurpose, reg)
	if err != nil {
		oauthFail(w, http.StatusInternalServerError, "server_error", "the client could not be registered")
		return
	}
	// Not audited: anyone may register, and nothing is kept; a person
	// allowing the client (consent) is.
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id": clientIDPrefix + sealed, "client_id_issued_at": h.now().Unix(), "client_name": reg.Name,
		"redirect_uris": reg.RedirectURIs, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
	})
}

// client opens a registered client's id.
func (h *Handler) client(id string) (clientRegistration, bool) {
	var reg clientRegistration
	sealed, ok := strings.CutPrefix(id, clientIDPrefix)
	return reg, ok && h.seal.open(clientPurpose, sealed, &reg) == nil
}

// authorize checks an MCP client's authorization request and signs the
// person in through the provider; the callback ends at the consent page.
// Every error is answered here, never redirected: an unknown client or
// redirect URI as RFC 6749 §4.1.2.1 requires, and a malformed request too,
// since anyone may register a redirect URI.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	reg, ok := h.client(q.Get("client_id"))
	if !ok {
		fail(w, http.StatusBadRequest, "invalid_request_error", "client_id: not a client registered with this gateway ("+RegisterPath+"); remove the MCP server from the client and add it again")
		return
	}
	redirect, ok := reg.redirect(q.Get("redirect_uri"))
	if !ok {
		fail(w, http.StatusBadRequest, "invalid_request_error", "redirect_uri: not one the client registered")
		return
	}
	// Nothing is sent to the redirect URI before the person has seen the
	// consent page naming it: registration is open to anyone, so a
	// redirect on a malformed request would make the gateway an open
	// redirector (with the caller's state text) for any https URI.
	switch {
	case q.Get("response_type") != "code":
		fail(w, http.StatusBadRequest, "invalid_request_error", "response_type: only code (unsupported_response_type)")
		return
	case q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43:
		fail(w, http.StatusBadRequest, "invalid_request_error", "code_challenge: PKCE with S256 is required (invalid_request)")
		return
	case !h.sameResource(r, q.Get("resource")):
		fail(w, http.StatusBadRequest, "invalid_request_error", "resource: not this gateway (invalid_target)")
		return
	}
	p, err := h.provider(r.Context())
	if err != nil {
		h.providerFailed(w, r, err)
		return
	}
	f := flow{State: randomID(), Nonce: randomID(), Verifier: oauth2.GenerateVerifier(), Return: "/", Redirect: h.redirectURL(r),
		Expires: h.now().Add(flowTTL), MCP: &mcpAuthorization{ClientID: q.Get("client_id"), Name: reg.Name, Redirect: redirect,
			State: q.Get("state"), Challenge: q.Get("code_challenge"), Resource: q.Get("resource"), Scope: q.Get("scope")}}
	h.begin(w, r, p, f)
}

// sameResource: a resource indicator, when given, names this gateway.
func (h *Handler) sameResource(r *http.Request, resource string) bool {
	if resource == "" {
		return true
	}
	u, err := url.Parse(resource)
	return err == nil && u.Fragment == "" && strings.EqualFold(u.Scheme+"://"+u.Host, h.origin(r))
}

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Allow {{.Client}}?</title></head>
<body style="font-family:sans-serif;max-width:36em;margin:4em auto">
<h1>Allow {{.Client}} to use this gateway as {{.Person}}?</h1>
<p>It will call the gateway's MCP tools and models with your access, limits and allow-lists, and send you back to <code>{{.Host}}</code>.
Allow only a client you just added yourself.</p>
<form method="post" action="{{.Action}}"><input type="hidden" name="grant" value="{{.Grant}}">
<button name="decision" value="allow">Allow</button> <button name="decision" value="deny">Deny</button></form>
</body></html>`))

// mcpHandOff ends an MCP client's sign-in at a consent page: the gateway
// is one client at the provider, so the provider's consent (often
// skipped) does not say which MCP client asked; without this page a
// link to another's redirect URI would take a signed-in person's grant.
func (h *Handler) mcpHandOff(w http.ResponseWriter, r *http.Request, f flow, person Person, refresh string) {
	m := f.MCP
	now := h.now()
	g := mcpGrant{ID: randomID(), Person: person, IdPRefresh: refresh, ClientID: m.ClientID, Redirect: m.Redirect, State: m.State,
		Challenge: m.Challenge, Resource: m.Resource, Scope: m.Scope, Expires: now.Add(flowTTL), SignedIn: now}
	sealed, err := h.seal.seal(consentPurpose, g)
	if err != nil {
		fail(w, http.StatusInternalServerError, "", "the sign-in could not be handed to the client")
		return
	}
	http.SetCookie(w, h.cookie(r, flowCookie, "", prefix, time.Time{}))
	host, source := consentTarget(m.Redirect)
	name := m.Name
	if name == "" {
		name = "an MCP client"
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'; default-src 'none'; style-src 'unsafe-inline'; form-action 'self' "+source)
	_ = consentPage.Execute(w, map[string]string{"Client": name, "Person": person.ID(), "Host": host, "Action": ConsentPath, "Grant": sealed})
}

// consentTarget is what the consent page names of a redirect URI (its
// scheme and host, or the whole URI for an app's own scheme) and the CSP
// source its form may go on to: scheme and host, or only "scheme:" for an
// app's scheme, so that no registered text reaches the header beyond
// what a CSP source can be (a URI such as "myapp:x;script-src *" was put
// in it whole).
func consentTarget(redirect string) (host, source string) {
	u, err := url.Parse(redirect)
	if err != nil || u.Scheme == "" {
		return redirect, "'none'"
	}
	if u.Host != "" {
		return u.Scheme + "://" + u.Host, u.Scheme + "://" + u.Host
	}
	return redirect, u.Scheme + ":"
}

// consent redirects to the client with a code, or with access_denied.
func (h *Handler) consent(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		fail(w, http.StatusBadRequest, "invalid_request_error", "body: not a form")
		return
	}
	var g mcpGrant
	if err := h.seal.open(consentPurpose, r.PostForm.Get("grant"), &g); err != nil || !h.now().Before(g.Expires) {
		fail(w, http.StatusBadRequest, "invalid_request_error", "grant: expired or not issued by this gateway; add the MCP server to the client again")
		return
	}
	v := url.Values{"iss": {h.origin(r)}}
	if g.State != "" {
		v.Set("state", g.State)
	}
	w.Header().Set("Cache-Control", "no-store")
	if r.PostForm.Get("decision") != "allow" {
		v.Set("error", "access_denied")
		v.Set("error_description", g.Person.ID()+" denied the client")
		http.Redirect(w, r, withQuery(g.Redirect, v), http.StatusSeeOther)
		return
	}
	g.Expires = h.now().Add(codeTTL)
	code, err := h.seal.seal(codePurpose, g)
	if err != nil {
		fail(w, http.StatusInternalServerError, "", "the code could not be made")
		return
	}
	v.Set("code", code)
	h.record(r.Context(), AuditEvent{Time: h.now().UTC(), Actor: g.Person.ID(), Action: "oidc.mcp_client_allowed", Source: source(r),
		Fields: map[string]string{"redirect_uri": g.Redirect, "client_id": g.ClientID[:min(len(g.ClientID), 16)] + "…"}})
	http.Redirect(w, r, withQuery(g.Redirect, v), http.StatusSeeOther)
}

func withQuery(redirect string, v url.Values) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return redirect
	}
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// redeem marks a code or refresh token used, false when it was already:
// in the ledger database (ledger.GrantRedeemer), so that it is good once
// over every instance that shares it, or, for a key store that keeps no
// such table, in this instance's memory.
func (h *Handler) redeem(ctx context.Context, store ledger.ControlStore, id string, until time.Time) (bool, error) {
	if gr, ok := store.(ledger.GrantRedeemer); ok {
		return gr.RedeemGrant(ctx, id, until, h.now())
	}
	return h.redeemHere(id, until), nil
}

// unredeem gives back a grant redeem took, for a request that failed for
// a passing reason: its client's only refresh token is not burned by a
// provider or database that did not answer.
func (h *Handler) unredeem(ctx context.Context, store ledger.ControlStore, id string) {
	if gr, ok := store.(ledger.GrantRedeemer); ok {
		if err := gr.ReleaseGrant(context.WithoutCancel(ctx), id); err != nil {
			h.tell(err)
		}
		return
	}
	h.mu.Lock()
	delete(h.redeemed, id)
	h.mu.Unlock()
}

// redeemHere is redeem in this instance's memory.
func (h *Handler) redeemHere(id string, until time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	for k, exp := range h.redeemed {
		if !now.Before(exp) {
			delete(h.redeemed, k)
		}
	}
	if _, used := h.redeemed[id]; used {
		return false
	}
	if h.redeemed == nil {
		h.redeemed = map[string]time.Time{}
	}
	h.redeemed[id] = until
	return true
}

// oauthToken is the token endpoint: authorization_code (PKCE S256) and
// refresh_token grants, answered with a per-person key.
func (h *Handler) oauthToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthFail(w, http.StatusBadRequest, "invalid_request", "body: not a form")
		return
	}
	req, oerr := parseTokenRequest(r.PostForm)
	if oerr != nil {
		oerr.write(w)
		return
	}
	var store ledger.ControlStore
	if h.controls != nil {
		store = h.controls.WaitStore(r.Context())
	}
	if store == nil {
		oauthFail(w, http.StatusServiceUnavailable, "temporarily_unavailable", "per-person keys are kept in the gateway's key store (its ledger database), which is not open")
		return
	}
	var g mcpGrant
	purpose, what := codePurpose, "code"
	if req.GrantType == "refresh_token" {
		purpose, what = refreshPurpose, "refresh_token"
	}
	if h.seal.open(purpose, req.Token, &g) != nil || !h.now().Before(g.Expires) {
		oauthFail(w, http.StatusBadRequest, "invalid_grant", what+": expired or not issued by this gateway")
		return
	}
	if !hmac.Equal([]byte(g.ClientID), []byte(req.ClientID)) {
		oauthFail(w, http.StatusBadRequest, "invalid_grant", what+": issued to another client")
		return
	}
	if req.GrantType == "authorization_code" {
		if req.RedirectURI != g.Redirect {
			oauthFail(w, http.StatusBadRequest, "invalid_grant", "redirect_uri: not the authorization request's")
			return
		}
		if oauth2.S256ChallengeFromVerifier(req.Verifier) != g.Challenge {
			oauthFail(w, http.StatusBadRequest, "invalid_grant", "code_verifier: does not match the code_challenge")
			return
		}
	}
	if req.Resource != "" && (!h.sameResource(r, req.Resource) || (g.Resource != "" && req.Resource != g.Resource)) {
		oauthFail(w, http.StatusBadRequest, "invalid_target", "resource: not the one authorized")
		return
	}
	if fresh, err := h.redeem(r.Context(), store, what+g.ID, g.Expires); err != nil {
		oauthFail(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the gateway's ledger database, where used codes and refresh tokens are kept, did not answer; retry")
		return
	} else if !fresh {
		oauthFail(w, http.StatusBadRequest, "invalid_grant", what+": already used")
		return
	}
	h.issueMCP(w, r, g, req.GrantType == "refresh_token", func() { h.unredeem(r.Context(), store, what+g.ID) })
}

// issueMCP mints the person's key for the client and a new refresh token;
// a renewal asks the provider first when it gave a refresh token.
// undo gives the grant back when it fails for a passing reason.
func (h *Handler) issueMCP(w http.ResponseWriter, r *http.Request, g mcpGrant, renew bool, undo func()) {
	now := h.now()
	via := "mcp"
	if renew {
		via = "mcp_refresh"
		if g.IdPRefresh != "" {
			person, refresh, refused, err := h.renewAtProvider(r.Context(), g.IdPRefresh)
			if err != nil {
				// The error may name the provider's address (providerFailed).
				h.tell(err)
				if !refused {
					undo()
					oauthFail(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the identity provider did not answer; retry with the same refresh token")
					return
				}
				oauthFail(w, http.StatusBadRequest, "invalid_grant", "the identity provider did not renew the sign-in; sign in again")
				return
			}
			g.Person, g.IdPRefresh = person, refresh
		}
	}
	expires := g.SignedIn.Add(h.cfg.SessionTTL)
	if g.IdPRefresh != "" {
		expires = now.Add(refreshTTL)
	}
	grant, refusal := h.grantFor(r.Context(), g.Person)
	if refusal != "" {
		oauthFail(w, http.StatusBadRequest, "invalid_grant", refusal)
		return
	}
	ttl := min(mcpKeyTTL, h.cfg.KeyTTL)
	key, err := h.mint(r.Context(), g.Person, grant, "mcp: ", ttl)
	if err != nil {
		undo()
		oauthFail(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the key could not be stored; retry")
		return
	}
	next := mcpGrant{ID: randomID(), Person: g.Person, IdPRefresh: g.IdPRefresh, ClientID: g.ClientID, Resource: g.Resource,
		Scope: g.Scope, Expires: expires, SignedIn: g.SignedIn}
	refresh, err := h.seal.seal(refreshPurpose, next)
	if err != nil {
		undo()
		oauthFail(w, http.StatusInternalServerError, "server_error", "the refresh token could not be made")
		return
	}
	h.record(r.Context(), AuditEvent{Time: now.UTC(), Actor: g.Person.ID(), Action: "oidc.key_minted", Target: key.KeyID, Source: source(r),
		Fields: map[string]string{"via": via, "role": string(grant.Role), "workspace": grant.Workspace, "expires_at": key.ExpiresAt}})
	out := map[string]any{"access_token": key.Key, "token_type": "Bearer", "expires_in": int(ttl.Seconds()), "refresh_token": refresh}
	if g.Scope != "" {
		out["scope"] = g.Scope
	}
	writeJSON(w, http.StatusOK, out)
}

// renewAtProvider renews the person's sign-in with the provider's refresh
// token: a person the provider no longer signs in gets no new key.
// refused: the provider answered no (else it could not be asked, and
// asking again later may do).
func (h *Handler) renewAtProvider(ctx context.Context, refresh string) (person Person, next string, refused bool, err error) {
	p, err := h.provider(ctx)
	if err != nil {
		return Person{}, "", false, err
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, h.hc), 15*time.Second)
	defer cancel()
	tok, err := h.oauth(p, "").TokenSource(ctx, &oauth2.Token{RefreshToken: refresh, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		refused := errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500
		return Person{}, "", refused, fmt.Errorf("refresh: the identity provider did not renew the sign-in (%w)", err)
	}
	person, _, err = h.person(ctx, p, tok, "", false)
	if err != nil {
		return Person{}, "", true, err
	}
	if tok.RefreshToken != "" {
		refresh = tok.RefreshToken
	}
	return person, refresh, false, nil
}
