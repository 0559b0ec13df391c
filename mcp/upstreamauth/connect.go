package upstreamauth

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// The person's side, under Path, for a dashboard session (llm_auth sends
// a browser without one to sign in first and back):
//
//	GET  Path                     the person's servers: connected or not, connect and disconnect;
//	                              for an admin, the shared keys' grants too
//	GET  Path+"server/<name>"     a page asking the signed-in person to confirm connecting <name>
//	GET  Path+"link/<sealed>"     the same page for a connect link from an MCP error: for the person it names only
//	POST Path+"start"             the confirmation: {"link": sealed} in, {"redirect": the authorization URL} out
//	GET  Path+"callback/<name>"   the authorization server's redirect back, one URI per server
//	POST Path+"disconnect/<name>" forget the person's grant, or with {"unit": "k:<key>"} an admin a key's
//
// A GET never starts an authorization: a cross-site page could make a
// browser open a link. Only the POST does, and every POST of a session
// carries its CSRF header (identity checks it before this handler runs).
// A link names the person (or key) it was made for; it starts the
// authorization only for that person's own session, so a link forwarded
// to someone else cannot attach their account to the wrong person. The
// OAuth state it starts is sealed, bound to the same person and server,
// expires with the link, and completes once on any instance (the ledger's
// mcp_upstream_links).

// ServeHTTP serves the pages and links above.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	rest := strings.TrimPrefix(r.URL.Path, Path)
	id := policy.IdentityFrom(r.Context())
	if id == nil || id.Person == "" {
		b.page(w, http.StatusUnauthorized, "Sign in first", "Open this page in the browser where you are signed in to the gateway's dashboard: connecting an account needs your own sign-in, not a key.", nil)
		return
	}
	switch {
	case rest == "" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		b.list(w, r, id)
	case strings.HasPrefix(rest, "server/") && r.Method == http.MethodGet:
		name := strings.TrimPrefix(rest, "server/")
		if !b.Has(name) {
			b.page(w, http.StatusNotFound, "No such server", "No auth: oauth MCP server is called "+name+".", nil)
			return
		}
		b.confirm(w, id, link{Server: name, Unit: Unit(id), Expires: b.now().Add(linkTTL), Nonce: randomID()})
	case strings.HasPrefix(rest, "link/") && r.Method == http.MethodGet:
		var l link
		if open(b.seal.links, linkAD, strings.TrimPrefix(rest, "link/"), &l) != nil {
			b.page(w, http.StatusBadRequest, "Link not valid", "This connect link was not made by this gateway, or was altered. Call the tool again for a new one, or connect from this page: "+Path, nil)
			return
		}
		b.confirm(w, id, l)
	case rest == "start" && r.Method == http.MethodPost:
		b.begin(w, r, id)
	case strings.HasPrefix(rest, "callback/") && r.Method == http.MethodGet:
		b.callback(w, r, id, strings.TrimPrefix(rest, "callback/"))
	case strings.HasPrefix(rest, "disconnect/") && r.Method == http.MethodPost:
		b.disconnect(w, r, id, strings.TrimPrefix(rest, "disconnect/"))
	default:
		b.page(w, http.StatusNotFound, "Not found", "Nothing here; your MCP connections are at "+Path, nil)
	}
}

// mayAct reports whether the signed-in id may connect unit's grant: their
// own, or, for an admin, a key of no one (a shared service key).
func mayAct(id *policy.Identity, unit string) bool {
	if isPersonUnit(unit) {
		// Their unit; or the one their keys minted before subjects were
		// recorded still use, which their verified email names.
		return unit == Unit(id) || unit == legacyUnit(id)
	}
	return strings.HasPrefix(unit, "k:") && id.Role == policy.RoleAdmin
}

// refusal is why id may not connect l, as a page's status, title and
// text; status 0 when it may.
func (b *Broker) refusal(id *policy.Identity, l link) (int, string, string) {
	switch {
	case b.servers[l.Server] == nil:
		return http.StatusNotFound, "No such server", "The MCP server this link names is no longer an auth: oauth server of this gateway."
	case !b.now().Before(l.Expires):
		return http.StatusGone, "Link expired", "This connect link has expired. Call the tool again for a new one, or connect " + l.Server + " from " + Path
	case !mayAct(id, l.Unit):
		return http.StatusForbidden, "Not your link", "This link connects " + l.Server + " for someone else, so it cannot take your sign-in. To connect your own account, open " + Path + " or call the tool with your own key."
	case b.opts.PublicURL == "":
		return http.StatusServiceUnavailable, "Not set up", "The gateway has no public_url, so the authorization server cannot send you back to it; ask an admin to set public_url in the modelgate block."
	}
	return 0, "", ""
}

// start discovers l's server and returns the authorization URL to send
// the person to, with the sealed state of the flow.
func (b *Broker) start(ctx context.Context, l link) (string, error) {
	s := b.servers[l.Server]
	d, err := b.discover(ctx, s)
	if err != nil {
		return "", err
	}
	st := state{link: l, Verifier: oauth2.GenerateVerifier(), ClientID: d.clientID, ClientSecret: d.secret, AuthStyle: int(d.authStyle),
		TokenURL: d.tokenURL, Issuer: d.issuer, Resource: d.resource, Redirect: b.redirect(l.Server), Scopes: d.scopes, IssRequired: d.issRequired}
	sealed, err := seal(b.seal.links, stateAD, st)
	if err != nil {
		return "", errors.New("the authorization could not be started")
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(st.Verifier), oauth2.SetAuthURLParam("resource", st.Resource)}
	if !isPersonUnit(l.Unit) {
		// A shared key's grant: the admin must see the authorization
		// server's consent, not a remembered one passed silently.
		opts = append(opts, oauth2.SetAuthURLParam("prompt", "consent"))
	}
	return st.config(d.authURL).AuthCodeURL(sealed, opts...), nil
}

func (st *state) config(authURL string) *oauth2.Config {
	c := &oauth2.Config{ClientID: st.ClientID, ClientSecret: st.ClientSecret, RedirectURL: st.Redirect,
		Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: st.TokenURL, AuthStyle: oauth2.AuthStyle(st.AuthStyle)}}
	if st.Scopes != "" {
		c.Scopes = strings.Fields(st.Scopes)
	}
	return c
}

// callback completes an authorization: the same person, once, in time;
// the code is exchanged with its PKCE verifier and the resource, and the
// tokens are stored sealed.
func (b *Broker) callback(w http.ResponseWriter, r *http.Request, id *policy.Identity, serverName string) {
	q := r.URL.Query()
	var st state
	if open(b.seal.links, stateAD, q.Get("state"), &st) != nil {
		b.page(w, http.StatusBadRequest, "Not valid", "This sign-in was not started by this gateway, or was altered.", nil)
		return
	}
	switch {
	case !b.now().Before(st.Expires):
		b.page(w, http.StatusGone, "Expired", "This sign-in took too long; start it again from "+Path, nil)
		return
	case !mayAct(id, st.Unit):
		b.page(w, http.StatusForbidden, "Not your sign-in", "This sign-in was started for someone else; it cannot complete in your session.", nil)
		return
	case b.servers[st.Server] == nil:
		b.page(w, http.StatusNotFound, "No such server", "The MCP server is no longer an auth: oauth server of this gateway.", nil)
		return
	case q.Get("error") != "":
		b.page(w, http.StatusForbidden, "Not connected", st.Server+"'s authorization server answered "+errorCode(q.Get("error"))+"; nothing was stored.", nil)
		return
	case serverName != st.Server:
		// The answer to one server's authorization arrived at another's
		// redirect URI: a mix-up (RFC 9700 4.4.2); its code is sent
		// nowhere.
		b.page(w, http.StatusBadRequest, "Wrong server", "This answer is for another MCP server's sign-in than the one it came back to; nothing was sent or stored. Start again from "+Path, nil)
		return
	case q.Get("iss") == "" && st.IssRequired:
		// RFC 9207 2.4: the server said it always sends iss.
		b.page(w, http.StatusBadRequest, "No issuer", "The authorization server's answer lacks iss, which its metadata says it always sends; nothing was sent or stored.", nil)
		return
	case q.Get("iss") != "" && q.Get("iss") != st.Issuer:
		// RFC 9207: an answer from another authorization server (iss is
		// compared exactly, as RFC 9207 2.4 says).
		b.page(w, http.StatusBadRequest, "Wrong issuer", "The answer came from another authorization server than the one the sign-in was sent to.", nil)
		return
	case q.Get("code") == "":
		b.page(w, http.StatusBadRequest, "No code", "The authorization server sent no code.", nil)
		return
	}
	var store ledger.MCPUpstreamTokenStore
	if b.opts.Store != nil {
		store = b.opts.Store()
	}
	if store == nil {
		b.page(w, http.StatusServiceUnavailable, "Try again", ErrNoStore.Error()+"; try again in a moment.", nil)
		return
	}
	first, err := store.UseMCPUpstreamLink(r.Context(), st.Nonce, st.Expires, b.now())
	if err != nil {
		b.page(w, http.StatusServiceUnavailable, "Try again", "The gateway's ledger database did not answer; start again from "+Path, nil)
		return
	}
	if !first {
		b.page(w, http.StatusConflict, "Used already", "This link has completed a sign-in already; a link works once. Start again from "+Path, nil)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), oauth2.HTTPClient, b.hc), 15*time.Second)
	defer cancel()
	tok, err := st.config("").Exchange(ctx, q.Get("code"), oauth2.VerifierOption(st.Verifier), oauth2.SetAuthURLParam("resource", st.Resource))
	if err != nil {
		b.page(w, http.StatusBadGateway, "Not connected", st.Server+"'s authorization server refused the code ("+oauthReason(err)+"); start again from "+Path, nil)
		return
	}
	set := tokenSet{Access: tok.AccessToken, Refresh: tok.RefreshToken, Type: tok.TokenType, Expiry: b.expiry(tok), ClientID: st.ClientID,
		ClientSecret: st.ClientSecret, TokenURL: st.TokenURL, AuthStyle: st.AuthStyle, Scopes: st.Scopes, Connected: b.now().UTC(), Issuer: st.Issuer}
	sealed, err := b.sealSet(st.Server, st.Unit, set)
	if err == nil {
		_, err = store.PutMCPUpstreamToken(context.WithoutCancel(r.Context()), ledger.MCPUpstreamToken{Server: st.Server, Unit: st.Unit, Sealed: sealed, ExpiresAt: set.Expiry, UpdatedAt: b.now()})
	}
	if err != nil {
		b.page(w, http.StatusServiceUnavailable, "Not stored", "The grant could not be stored in the gateway's ledger database; start again from "+Path, nil)
		return
	}
	b.record(r, id, "mcp.upstream.connected", st.Server, st.Unit)
	if b.onDisconnect != nil {
		// A session the unit held on an older grant ends: the next call
		// opens one on this grant.
		b.onDisconnect(st.Server, st.Unit)
	}
	who := "your account"
	if !isPersonUnit(st.Unit) {
		who = "key " + strings.TrimPrefix(st.Unit, "k:")
	}
	b.page(w, http.StatusOK, "Connected", "Connected "+who+" to MCP server "+st.Server+". You can close this page and call the tool again.", nil)
}

func (b *Broker) disconnect(w http.ResponseWriter, r *http.Request, id *policy.Identity, name string) {
	if !b.Has(name) {
		writeJSON(w, http.StatusNotFound, apiError("no auth: oauth MCP server is called "+bounded(name)))
		return
	}
	var store ledger.MCPUpstreamTokenStore
	if b.opts.Store != nil {
		store = b.opts.Store()
	}
	if store == nil {
		writeJSON(w, http.StatusServiceUnavailable, apiError(ErrNoStore.Error()))
		return
	}
	units, err := disconnectUnits(r, id)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError(err.Error()))
		return
	}
	for _, unit := range units {
		gone, outcome, err := b.forget(r.Context(), store, name, unit)
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, apiError("the gateway's ledger database did not answer; try again"))
			return
		}
		if b.onDisconnect != nil {
			b.onDisconnect(name, unit)
		}
		if gone {
			b.record(r, id, "mcp.upstream.disconnected", name, unit, "revocation", outcome)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"server": name, "connected": false})
}

// record audits action on serverName for unit; more are further
// field-value pairs.
func (b *Broker) record(r *http.Request, id *policy.Identity, action, serverName, unit string, more ...string) {
	if b.opts.Audit == nil {
		return
	}
	fields := map[string]string{"for": unit}
	for i := 0; i+1 < len(more); i += 2 {
		if more[i+1] != "" {
			fields[more[i]] = more[i+1]
		}
	}
	b.opts.Audit.Record(r.Context(), audit.Event{Time: b.now().UTC(), Actor: id.Person, Action: action, Target: serverName,
		Source: r.RemoteAddr, Fields: fields})
}

// Connection is one server as the person's page lists it.
type Connection struct {
	Server      string     `json:"server"`
	Connected   bool       `json:"connected"`
	ConnectedAt *time.Time `json:"connected_at,omitempty"`
	ConnectURL  string     `json:"connect_url"`
}

// Connections lists every auth: oauth server for unit, by name.
func (b *Broker) Connections(ctx context.Context, unit string) ([]Connection, error) {
	var store ledger.MCPUpstreamTokenStore
	if b.opts.Store != nil {
		store = b.opts.Store()
	}
	if store == nil {
		return nil, ErrNoStore
	}
	rows, err := store.MCPUpstreamTokensOf(ctx, unit)
	if err != nil {
		return nil, err
	}
	have := map[string]time.Time{}
	for _, row := range rows {
		have[row.Server] = row.CreatedAt
	}
	out := []Connection{}
	for name := range b.servers {
		c := Connection{Server: name, ConnectURL: Path + "server/" + name}
		if at, ok := have[name]; ok {
			c.Connected, c.ConnectedAt = true, &at
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out, nil
}

func (b *Broker) list(w http.ResponseWriter, r *http.Request, id *policy.Identity) {
	conns, err := b.Connections(r.Context(), Unit(id))
	var keys []KeyGrant
	if err == nil {
		keys, err = b.keyGrants(r, id, b.opts.Store())
	}
	if err != nil {
		if errors.Is(err, ErrNoStore) {
			b.page(w, http.StatusServiceUnavailable, "Try again", err.Error(), nil)
			return
		}
		b.page(w, http.StatusServiceUnavailable, "Try again", "The gateway's ledger database did not answer.", nil)
		return
	}
	if r.URL.Query().Get("format") == "json" || strings.Contains(r.Header.Get("Accept"), "application/json") {
		out := map[string]any{"person": id.Person, "data": conns}
		if keys != nil {
			out["key_grants"] = keys
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	b.page(w, http.StatusOK, "Your MCP connections", "Servers that act as you with your own account. Connect one once; disconnect to make the gateway forget your grant.", &pageMore{Conns: conns, Keys: keys})
}
