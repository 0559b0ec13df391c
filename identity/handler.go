package identity

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/policy"
)

// Paths the handler answers; the redirect URI to register is the site's
// CallbackPath.
const (
	LoginPath    = "/auth/oidc/login"
	CallbackPath = "/auth/oidc/callback"
	LogoutPath   = "/auth/oidc/logout"
	StatusPath   = "/auth/oidc/status"
	DevicePath   = "/auth/oidc/device"
	TokenPath    = "/auth/oidc/token"
	MePath       = "/v1/me"
	prefix       = "/auth/oidc/"

	sessionCookie = "mg_session"
	flowCookie    = "mg_oidc_flow"
	flowTTL       = 10 * time.Minute
	// retryDiscovery is how long a failed discovery is remembered before
	// the next request tries again: an IdP that was down comes back
	// without a restart.
	retryDiscovery = 10 * time.Second
	// retryDeviceFlow is how long a refusal of the device grant is
	// remembered: the CLI goes straight to the browser meanwhile, and a
	// client the provider's admin has fixed works again without a restart.
	retryDeviceFlow = 10 * time.Minute
	deviceGrant     = "urn:ietf:params:oauth:grant-type:device_code"
)

// Handler is the relying party. Build it with New.
type Handler struct {
	cfg      Config
	controls *policy.Controls
	audit    Auditor
	seal     *sealer
	hc       *http.Client
	now      func() time.Time

	mu        sync.Mutex
	prov      *oidc.Provider
	deviceURL string
	// deviceRefused is the provider's refusal of the device grant for
	// this client (an OAuth error from its device endpoint), remembered until
	// deviceRefusedAt+retryDeviceFlow: the discovery document says only
	// that the provider has the flow, not that this client may use it.
	deviceRefused   string
	deviceRefusedAt time.Time
	// deviceConfirmed: the provider started a device sign-in for this
	// client since the handler was built.
	deviceConfirmed bool
	provErr         error
	provAt          time.Time
	dir             Directory
	// budgets, when set, give /v1/me the person's limits and spend.
	budgets *policy.Budgets
	// health is the last check that the discovered provider still
	// answers, made at most every retryDiscovery for the status page.
	health   error
	healthAt time.Time
	// unavailable hears why the provider cannot be used (the log), at
	// most once per retryDiscovery; nil: not told.
	unavailable func(error)
	// redeemed are the MCP authorization codes this instance has
	// exchanged, until they expire: a code is good once.
	redeemed map[string]time.Time
}

// New checks cfg and builds the handler. It makes no network call: the
// provider is discovered when first needed, so the gateway starts (and
// key sign-in works) while the provider is down.
func New(cfg Config, controls *policy.Controls, audit Auditor) (*Handler, error) {
	u, err := url.Parse(cfg.Issuer)
	if cfg.Issuer == "" || err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("oidc issuer: %q is not an https URL; give the provider's issuer, e.g. https://example.okta.com", cfg.Issuer)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("oidc issuer: %s must use https (plain http is accepted on loopback only, for tests)", cfg.Issuer)
	}
	if cfg.ClientID == "" {
		return nil, errors.New("oidc client_id: required; copy it from the application registered with the provider")
	}
	if cfg.RedirectURL != "" {
		if r, err := url.Parse(cfg.RedirectURL); err != nil || r.Host == "" || r.Path != CallbackPath {
			return nil, fmt.Errorf("oidc redirect_url: %q must be an absolute URL ending in %s", cfg.RedirectURL, CallbackPath)
		}
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{oidc.ScopeOpenID, "email", "profile"}
	} else if !contains(cfg.Scopes, oidc.ScopeOpenID) {
		cfg.Scopes = append([]string{oidc.ScopeOpenID}, cfg.Scopes...)
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	if cfg.KeyTTL <= 0 {
		cfg.KeyTTL = 12 * time.Hour
	}
	if cfg.Name == "" {
		cfg.Name = u.Host
	}
	if audit == nil {
		audit = AuditFunc(func(context.Context, AuditEvent) {})
	}
	return &Handler{cfg: cfg, controls: controls, audit: audit, seal: newSealer(cfg),
		hc: &http.Client{Timeout: 10 * time.Second}, now: time.Now}, nil
}

// Groups are the handler's group rules.
func (h *Handler) Groups() Groups { return h.cfg.Groups }

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// provider discovers the issuer once, remembering a failure briefly.
func (h *Handler) provider(ctx context.Context) (*oidc.Provider, error) {
	h.mu.Lock()
	if h.prov != nil {
		p := h.prov
		h.mu.Unlock()
		return p, nil
	}
	if h.provErr != nil && h.now().Sub(h.provAt) < retryDiscovery {
		err := h.provErr
		h.mu.Unlock()
		return nil, err
	}
	h.mu.Unlock()
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, h.hc), 5*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, h.cfg.Issuer)
	var device string
	if err == nil {
		var extra struct {
			Device string   `json:"device_authorization_endpoint"`
			Grants []string `json:"grant_types_supported"`
		}
		_ = p.Claims(&extra)
		// A provider listing its grants without the device grant has
		// no device flow, whatever endpoint it names.
		if extra.Grants == nil || contains(extra.Grants, deviceGrant) {
			device = extra.Device
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.provErr, h.provAt = fmt.Errorf("the identity provider %s cannot be used: %v", h.cfg.Issuer, err), h.now()
		h.tell(h.provErr)
		return nil, h.provErr
	}
	h.prov, h.deviceURL, h.provErr = p, device, nil
	return p, nil
}

func (h *Handler) oauth(p *oidc.Provider, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: h.cfg.ClientID, ClientSecret: h.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: redirect, Scopes: h.cfg.Scopes}
}

func (h *Handler) redirectURL(r *http.Request) string {
	if h.cfg.RedirectURL != "" {
		return h.cfg.RedirectURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + CallbackPath
}

// fail answers in Anthropic's error shape, as the rest of the admin
// surface does.
func fail(w http.ResponseWriter, status int, code, msg string) {
	(&apierror.Error{Status: status, Code: code, Message: msg}).Write(w, apierror.Anthropic)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func source(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ServeHTTP answers the paths under /auth/oidc/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	type route struct {
		method string
		serve  http.HandlerFunc
	}
	routes := map[string]route{
		LoginPath: {http.MethodGet, h.login}, CallbackPath: {http.MethodGet, h.callback},
		LogoutPath: {http.MethodPost, h.logout}, StatusPath: {http.MethodGet, h.status},
		DevicePath: {http.MethodPost, h.device}, TokenPath: {http.MethodPost, h.token},
		ProtectedResourcePath: {http.MethodGet, h.protectedResource}, AuthorizationServerPath: {http.MethodGet, h.authorizationServer},
		RegisterPath: {http.MethodPost, h.register}, AuthorizePath: {http.MethodGet, h.authorize}, OAuthTokenPath: {http.MethodPost, h.oauthToken},
		ConsentPath: {http.MethodPost, h.consent},
	}
	path := r.URL.Path
	if strings.HasPrefix(path, ProtectedResourcePath+"/") {
		// RFC 9728 §3.1: the resource's path follows the well-known name.
		path = ProtectedResourcePath
	}
	rt, ok := routes[path]
	switch {
	case !ok:
		fail(w, http.StatusNotFound, "", "no endpoint for "+r.Method+" "+r.URL.Path+" on this gateway")
	case r.Method != rt.method:
		w.Header().Set("Allow", rt.method)
		fail(w, http.StatusMethodNotAllowed, "", "method "+r.Method+" not allowed on "+r.URL.Path+"; use "+rt.method)
	default:
		rt.serve(w, r)
	}
}

// status tells the dashboard whether to offer the provider, and why not.
func (h *Handler) status(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"enabled": true, "name": h.cfg.Name, "login_url": LoginPath}
	_, err := h.provider(r.Context())
	if err == nil {
		err = h.alive(r.Context())
	}
	out["ready"] = err == nil
	if err != nil {
		// The provider's address and the dial error name the inside of
		// the network: the page is keyless, so only an admin reads them.
		out["error"] = providerUnavailable
		if h.admin(r) {
			out["error"] = err.Error()
		}
	} else {
		refused := h.deviceRefusal()
		h.mu.Lock()
		// device_flow: the provider offers the flow and has not refused
		// it to this client lately; device_flow_confirmed: it started
		// one for this client. Providers publish no per-client grants,
		// so either is known only from a try.
		out["device_flow"] = h.deviceURL != "" && refused == ""
		out["device_flow_confirmed"] = h.deviceConfirmed && refused == ""
		h.mu.Unlock()
		if refused != "" {
			out["device_flow_error"] = refused
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// providerFailed answers a caller that the provider cannot be used: its
// address and the dial or TLS error name the inside of the network, so
// they go to the log and to an admin, and every other caller of these
// keyless paths is told providerUnavailable.
func (h *Handler) providerFailed(w http.ResponseWriter, r *http.Request, err error) {
	h.tell(err)
	msg := providerUnavailable
	if h.admin(r) {
		msg = err.Error()
	}
	fail(w, http.StatusBadGateway, "idp_unavailable", msg)
}

// providerUnavailable is what a caller who is not an admin is told of a
// provider that cannot be used.
const providerUnavailable = "sign-in with the identity provider is unavailable right now; key sign-in still works, and an admin sees why on this page (with an admin key or signed in) and in the gateway's log"

// admin reports whether the caller of a keyless path is an admin: by the
// key the gateway identified on it, or by a dashboard session.
func (h *Handler) admin(r *http.Request) bool {
	if id := policy.IdentityFrom(r.Context()); id != nil {
		return id.Role == policy.RoleAdmin
	}
	s, state := h.currentSession(r)
	if state != sessionOK {
		return false
	}
	grant, refusal := h.grantFor(r.Context(), s.Person)
	return refusal == "" && grant.Role.Policy() == policy.RoleAdmin
}

// deviceRefusal is the provider's remembered refusal of the device grant,
// empty when there is none or it is older than retryDeviceFlow.
func (h *Handler) deviceRefusal() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.deviceRefused != "" && h.now().Sub(h.deviceRefusedAt) >= retryDeviceFlow {
		h.deviceRefused = ""
	}
	return h.deviceRefused
}

// alive reports whether the provider, discovered earlier, still answers
// its discovery document: a provider that went down after startup is
// shown as down, not as ready.
func (h *Handler) alive(ctx context.Context) error {
	h.mu.Lock()
	if h.now().Sub(h.healthAt) < retryDiscovery {
		err := h.health
		h.mu.Unlock()
		return err
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var err error
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(h.cfg.Issuer, "/")+"/.well-known/openid-configuration", nil)
	if resp, rerr := h.hc.Do(req); rerr != nil {
		err = fmt.Errorf("the identity provider %s does not answer: %v", h.cfg.Issuer, rerr)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("the identity provider %s answers its discovery document with HTTP %d", h.cfg.Issuer, resp.StatusCode)
		}
	}
	h.mu.Lock()
	h.health, h.healthAt = err, h.now()
	if err != nil {
		h.tell(err)
	}
	h.mu.Unlock()
	return err
}

// flow is the sign-in in progress, kept sealed in the browser.
type flow struct {
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"`
	Return   string    `json:"r"`
	Redirect string    `json:"u"`
	Expires  time.Time `json:"e"`
	// CLIPort and CLIChallenge are set for `caddy modelgate login
	// --browser`: the sign-in ends at the CLI's loopback listener, which
	// redeems it with the verifier of CLIChallenge.
	CLIPort      int    `json:"cp,omitempty"`
	CLIChallenge string `json:"cc,omitempty"`
	// MCP is set when an MCP client's authorization request started the
	// sign-in (mcpauth.go): it ends at the client's redirect URI.
	MCP *mcpAuthorization `json:"m,omitempty"`
}

// safeReturn keeps a return address on this site: a path, never another
// host ("//evil", "/\evil", "https://…").
func safeReturn(s string) string {
	if s == "" || !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "/\\") || strings.ContainsAny(s, "\r\n\\") {
		return policy.UIPath
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return policy.UIPath
	}
	return s
}

func (h *Handler) cookie(r *http.Request, name, value, path string, expires time.Time) *http.Cookie {
	c := &http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode}
	if expires.IsZero() {
		c.MaxAge = -1
	} else {
		c.Expires = expires
		c.MaxAge = int(time.Until(expires).Seconds()) + 1
	}
	return c
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	p, err := h.provider(r.Context())
	if err != nil {
		h.providerFailed(w, r, err)
		return
	}
	q := r.URL.Query()
	f := flow{State: randomID(), Nonce: randomID(), Verifier: oauth2.GenerateVerifier(),
		Return: safeReturn(q.Get("return")), Redirect: h.redirectURL(r), Expires: h.now().Add(flowTTL)}
	if q.Has("cli_port") || q.Has("cli_challenge") {
		port, err := strconv.Atoi(q.Get("cli_port"))
		if err != nil || port < 1 || port > 65535 || len(q.Get("cli_challenge")) != 43 {
			fail(w, http.StatusBadRequest, "invalid_request_error", "cli_port and cli_challenge: a loopback port and an S256 PKCE challenge, as `caddy modelgate login --browser` sends them")
			return
		}
		f.CLIPort, f.CLIChallenge = port, q.Get("cli_challenge")
	}
	h.begin(w, r, p, f)
}

// begin keeps f sealed in the browser and sends it to the provider.
func (h *Handler) begin(w http.ResponseWriter, r *http.Request, p *oidc.Provider, f flow) {
	sealed, err := h.seal.seal(flowCookie, f)
	if err != nil {
		fail(w, http.StatusInternalServerError, "", "sign-in could not start")
		return
	}
	http.SetCookie(w, h.cookie(r, flowCookie, sealed, prefix, f.Expires))
	w.Header().Set("Cache-Control", "no-store")
	opts := []oauth2.AuthCodeOption{oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)}
	if u, err := url.Parse(h.cfg.Issuer); err == nil && u.Host == "accounts.google.com" {
		// Google issues refresh tokens for this parameter, not for the
		// offline_access scope.
		opts = append(opts, oauth2.AccessTypeOffline)
	}
	http.Redirect(w, r, h.oauth(p, f.Redirect).AuthCodeURL(f.State, opts...), http.StatusFound)
}

func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, msg string) {
	h.record(r.Context(), AuditEvent{Time: h.now().UTC(), Actor: "anonymous", Action: "oidc.signin_failed", Source: source(r),
		Fields: map[string]string{"reason": msg}})
	http.SetCookie(w, h.cookie(r, flowCookie, "", prefix, time.Time{}))
	fail(w, http.StatusUnauthorized, "authentication_error", msg)
}

func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		h.refuse(w, r, "the identity provider refused the sign-in: "+e+" "+q.Get("error_description"))
		return
	}
	c, err := r.Cookie(flowCookie)
	if err != nil {
		h.refuse(w, r, "state: this browser has no sign-in in progress (it expires after 10 minutes); start again at "+LoginPath)
		return
	}
	var f flow
	if err := h.seal.open(flowCookie, c.Value, &f); err != nil {
		h.refuse(w, r, "state: the sign-in cookie was "+err.Error())
		return
	}
	if !h.now().Before(f.Expires) {
		h.refuse(w, r, "state: the sign-in expired; start again at "+LoginPath)
		return
	}
	if q.Get("state") == "" || !hmac.Equal([]byte(q.Get("state")), []byte(f.State)) {
		h.refuse(w, r, "state: does not match the sign-in this browser started")
		return
	}
	p, err := h.provider(r.Context())
	if err != nil {
		h.providerFailed(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(r.Context(), h.hc), 15*time.Second)
	defer cancel()
	tok, err := h.oauth(p, f.Redirect).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		h.refuse(w, r, "code: the identity provider did not exchange it: "+oauthError(err))
		return
	}
	person, idt, err := h.person(ctx, p, tok, f.Nonce, true)
	if err != nil {
		h.refuse(w, r, err.Error())
		return
	}
	grant, refusal := h.grantFor(r.Context(), person)
	if refusal != "" {
		h.record(r.Context(), AuditEvent{Time: h.now().UTC(), Actor: person.ID(), Action: "oidc.signin_failed", Source: source(r),
			Fields: map[string]string{"reason": refusal}})
		fail(w, http.StatusForbidden, "permission_error", refusal)
		return
	}
	if f.CLIPort != 0 {
		h.handOff(w, r, f, person, tok.RefreshToken)
		return
	}
	if f.MCP != nil {
		h.mcpHandOff(w, r, f, person, tok.RefreshToken)
		return
	}
	exp := h.now().Add(h.cfg.SessionTTL)
	if idt.Expiry.Before(exp) {
		exp = idt.Expiry
	}
	s := session{ID: randomID(), Person: person, Expires: exp}
	sealed, err := h.seal.seal(sessionCookie, s)
	if err != nil {
		fail(w, http.StatusInternalServerError, "", "the session could not be made")
		return
	}
	http.SetCookie(w, h.cookie(r, flowCookie, "", prefix, time.Time{}))
	http.SetCookie(w, h.cookie(r, sessionCookie, sealed, "/", exp))
	h.record(r.Context(), AuditEvent{Time: h.now().UTC(), Actor: person.ID(), Action: "oidc.signin", Source: source(r),
		Fields: map[string]string{"role": string(grant.Role), "groups": strings.Join(grant.Matched, ","), "via": "dashboard"}})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, f.Return, http.StatusFound)
}

// DirectoryEntry is what a user directory (SCIM) knows of a person.
type DirectoryEntry struct {
	Active bool
	// Deleted: the directory deleted the person; they are refused as a
	// deactivated person is.
	Deleted bool
	// Groups replace the provider's when not nil.
	Groups []string
}

// Directory finds people provisioned by SCIM, by email (userName) or
// subject (externalId); the integrator wires the SCIM store to it.
type Directory interface {
	Lookup(ctx context.Context, email, subject string) (e DirectoryEntry, found bool)
}

// SetBudgets has /v1/me show the signed-in person each limit that applies
// to them, with what they spent.
func (h *Handler) SetBudgets(b *policy.Budgets) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.budgets = b
}

// SetUnavailable makes the handler tell f why its provider cannot be used
// (for the log): callers who are not admins are told only that it is not.
func (h *Handler) SetUnavailable(f func(error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unavailable = f
}

// tell passes err to the unavailable hook; the caller holds mu.
func (h *Handler) tell(err error) {
	if h.unavailable != nil {
		h.unavailable(err)
	}
}

// SetDirectory makes sign-ins, sessions and key renewals consult d: a
// deactivated person is refused, and the directory's groups decide.
func (h *Handler) SetDirectory(d Directory) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dir = d
}

// SetAuditor sends the handler's audit events to a.
func (h *Handler) SetAuditor(a Auditor) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.audit = a
}

// grantFor is what person may do now, or why they may not.
func (h *Handler) grantFor(ctx context.Context, person Person) (Grant, string) {
	h.mu.Lock()
	dir := h.dir
	h.mu.Unlock()
	if dir != nil {
		if e, found := dir.Lookup(ctx, person.Email, person.Subject); found {
			if e.Deleted {
				return Grant{}, person.ID() + " was deleted from the user directory; ask an admin to provision them again"
			}
			if !e.Active {
				return Grant{}, person.ID() + " is deactivated in the user directory; ask an admin to reactivate them"
			}
			if e.Groups != nil {
				person.Groups = e.Groups
			}
		}
	}
	g := h.cfg.Groups.Resolve(person.Groups)
	if !g.OK {
		return g, h.noGroup(person)
	}
	return g, ""
}

func (h *Handler) noGroup(p Person) string {
	return fmt.Sprintf("%s is in none of the groups this gateway grants access to (their groups: %s); ask an admin to add a `group` rule to llm_auth",
		p.ID(), strings.Join(p.Groups, ", "))
}

// oauthError names what the provider said, without its raw body.
func oauthError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			s := re.ErrorCode
			if re.ErrorDescription != "" {
				s += " (" + re.ErrorDescription + ")"
			}
			return s
		}
		return fmt.Sprintf("HTTP %d", re.Response.StatusCode)
	}
	// Anything else is the transport's error, which names the token
	// endpoint and the dial or TLS failure: not for the caller.
	return "the identity provider did not answer"
}

// person verifies tok's ID token (and its nonce, when one was sent) and
// reads who it names, asking the userinfo endpoint for the email and
// groups when the token leaves them out.
func (h *Handler) person(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, nonce string, needIDToken bool) (Person, *oidc.IDToken, error) {
	raw, _ := tok.Extra("id_token").(string)
	var claims map[string]any
	var idt *oidc.IDToken
	if raw == "" {
		if needIDToken {
			return Person{}, nil, errors.New("ID token: the provider's token answer has none (is the openid scope granted?)")
		}
	} else {
		var err error
		idt, err = p.Verifier(&oidc.Config{ClientID: h.cfg.ClientID, Now: h.now}).Verify(ctx, raw)
		if err != nil {
			return Person{}, nil, fmt.Errorf("ID token: %v", err)
		}
		if nonce != "" && !hmac.Equal([]byte(idt.Nonce), []byte(nonce)) {
			return Person{}, nil, errors.New("nonce: the ID token's nonce does not match the sign-in this browser started")
		}
		if err := idt.Claims(&claims); err != nil {
			return Person{}, nil, fmt.Errorf("ID token: claims: %v", err)
		}
	}
	_, hasGroups := claims[h.cfg.GroupsClaim]
	if claims == nil || claims["email"] == nil || claims["email_verified"] == nil || !hasGroups {
		if ui, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil {
			var extra map[string]any
			if ui.Claims(&extra) == nil {
				if idt != nil && ui.Subject != idt.Subject {
					return Person{}, nil, errors.New("userinfo: its subject is not the ID token's")
				}
				if claims == nil {
					claims = map[string]any{}
				}
				for k, v := range extra {
					if _, ok := claims[k]; !ok {
						claims[k] = v
					}
				}
			}
		} else if idt == nil {
			return Person{}, nil, fmt.Errorf("userinfo: %v", err)
		}
	}
	person := Person{}
	person.Subject, _ = claims["sub"].(string)
	// The email names the person (their limits, the groups they lead) only
	// when the provider says it verified it: an address a user could set
	// themselves would let them become someone else. Entra ID sends no
	// email_verified; its optional claim xms_edov says the email's domain
	// is the tenant's, verified.
	if emailVerified(claims["email_verified"]) || emailVerified(claims["xms_edov"]) {
		person.Email, _ = claims["email"].(string)
	}
	if person.Subject == "" {
		return Person{}, nil, errors.New("ID token: no subject")
	}
	// The verifier held the ID token's iss to the configured issuer; a
	// subject is unique only within its issuer.
	person.Issuer = h.cfg.Issuer
	switch g := claims[h.cfg.GroupsClaim].(type) {
	case []any:
		for _, v := range g {
			if s, ok := v.(string); ok {
				person.Groups = append(person.Groups, s)
			}
		}
	case string:
		person.Groups = strings.Fields(strings.ReplaceAll(g, ",", " "))
	}
	if person.Groups == nil {
		person.Groups = []string{}
	}
	return person, idt, nil
}

// emailVerified reads an email_verified claim: true, or "true" as some
// providers (Amazon Cognito) send it; absent is not verified.
func emailVerified(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}

// record sends e to the auditor.
func (h *Handler) record(ctx context.Context, e AuditEvent) {
	h.mu.Lock()
	a := h.audit
	h.mu.Unlock()
	a.Record(ctx, e)
}
