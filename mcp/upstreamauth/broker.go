// Package upstreamauth holds each person's own OAuth credentials to the
// upstream MCP servers whose mcp_servers entry says auth: oauth: it finds
// a server's authorization server (RFC 9728, RFC 8414), registers the
// gateway there once when no client is configured (RFC 7591, kept in the
// ledger: client.go), runs the
// authorization code flow with PKCE S256 and RFC 8707's resource for a
// person once (the connect link, connect.go), keeps the tokens sealed in
// the ledger (ledger.MCPUpstreamTokenStore) and refreshes them, one
// instance at a time, and revokes them at the authorization server when
// the grant ends (RFC 7009, revoke.go). The MCP gateway asks it for a
// caller's token (Broker.Token) on every request to such a server. A token never leaves
// this package except as an upstream request's Authorization header.
package upstreamauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// Path is where the connect links and the person's page are served.
const Path = policy.MCPConnectPath

// Options configure a Broker.
type Options struct {
	// Servers are the auth: oauth entries; others are ignored.
	Servers []*modellist.MCPServer
	// Key is the Caddyfile's mcp_token_key (at least MinKeyLength bytes).
	Key string
	// Store is the ledger's token table, nil while the ledger is not open.
	Store func() ledger.MCPUpstreamTokenStore
	// PublicURL is the gateway's base URL as browsers reach it: the base
	// of the connect links and of the OAuth redirect URI. Without it the
	// errors say how to connect from the dashboard.
	PublicURL string
	// Audit records connects and disconnects; nil records nothing.
	Audit audit.Recorder
	// HTTPClient reaches the authorization servers; nil is a client of
	// the gateway's own (no proxy environment's loopback checks: the
	// servers are the operator's, often internal).
	HTTPClient *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Site names the Caddy site the servers are configured in: grants are
	// bound to it, so two sites sharing the ledger and mcp_token_key never
	// use each other's (a server name and a key id are per site).
	Site string
}

// Broker hands out and renews the people's upstream tokens.
type Broker struct {
	opts    Options
	servers map[string]*server
	seal    *sealer
	hc      *http.Client
	cache   cache
	// onDisconnect is told when a person disconnects a server, so the
	// MCP gateway ends their session to it.
	onDisconnect func(server, unit string)
	// revokeWithin bounds an RFC 7009 revocation (revokeTimeout; tests
	// shorten it).
	revokeWithin time.Duration
	// revoking holds a slot per revocation Ended runs (revokeParallel).
	revoking chan struct{}
	// mu guards the ledger watches Close ends.
	mu     sync.Mutex
	stops  []func()
	closed bool
}

type server struct {
	name, url string
	oauth     modellist.MCPOAuth
	// bind is what the server's grants are sealed to besides its name
	// (tokenAD): its URL, its configured authorization server, the site.
	bind string
}

// New builds the broker; it fails without a usable key.
func New(o Options) (*Broker, error) {
	s, err := newSealer(o.Key)
	if err != nil {
		return nil, err
	}
	b := &Broker{opts: o, servers: map[string]*server{}, seal: s, hc: o.HTTPClient, revokeWithin: revokeTimeout,
		revoking: make(chan struct{}, revokeParallel),
		cache:    cache{byS: map[string]*discovered{}, errs: map[string]failure{}}}
	if b.hc == nil {
		// A dialer of the gateway's own: the SDK's discovery then leaves
		// private addresses alone (an internal MCP server is normal here).
		b.hc = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext, TLSHandshakeTimeout: 10 * time.Second}}
	}
	for _, m := range o.Servers {
		if m.Auth == modellist.MCPAuthOAuth && m.OAuth != nil {
			b.servers[m.Name] = &server{name: m.Name, url: m.URL, oauth: *m.OAuth,
				bind: m.URL + "\x00" + m.OAuth.AuthorizationServer + "\x00" + o.Site}
		}
	}
	return b, nil
}

// OnDisconnect sets what is told of a disconnect.
func (b *Broker) OnDisconnect(f func(server, unit string)) { b.onDisconnect = f }

func (b *Broker) now() time.Time {
	if b.opts.Now != nil {
		return b.opts.Now()
	}
	return time.Now()
}

// redirect is serverName's OAuth redirect URI: one per server, so an
// authorization server's answer arrives at the server it was asked for
// (RFC 9700 4.4.2: a mix-up attack needs one shared URI).
func (b *Broker) redirect(serverName string) string {
	return b.opts.PublicURL + Path + "callback/" + url.PathEscape(serverName)
}

// Unit is whose token a caller uses: the person behind the key (who
// signed in, or whom the key was minted for), else the key itself. A
// person is named by their identity provider's issuer and subject
// ("s:<issuer> <subject>") when the caller carries them, since an email
// may be given to someone else later and a grant must not follow it;
// only a caller without them (a session or key from before they were
// recorded) is named by email or subject ("p:…", the older units).
func Unit(id *policy.Identity) string {
	if id == nil {
		return ""
	}
	p := id.PersonID()
	switch {
	case p != "" && id.Subject != "":
		return "s:" + id.Subject
	case p != "":
		return "p:" + p
	}
	return "k:" + id.KeyID
}

// legacyUnit is the unit the caller's grants had before people were
// named by subject ("p:<email>"), "" when it is already their unit or
// they are no person. Such a row cannot say whose it was (the email may
// have passed on), so it is never used for a caller with a subject; it
// is only forgotten with their own disconnect.
func legacyUnit(id *policy.Identity) string {
	if p := id.PersonID(); p != "" && id.Subject != "" {
		return "p:" + p
	}
	return ""
}

// isPersonUnit reports a person's unit (not a key's).
func isPersonUnit(unit string) bool {
	return strings.HasPrefix(unit, "p:") || strings.HasPrefix(unit, "s:")
}

// NotConnectedError is a caller who has not connected the server (or
// whose grant ended): URL is their connect link.
type NotConnectedError struct {
	Server, URL, Why string
}

func (e *NotConnectedError) Error() string {
	if e.URL == "" {
		return fmt.Sprintf("MCP server %q needs your own sign-in (%s); connect it on the gateway's page %s (the dashboard's MCP connections) and call again", e.Server, e.Why, Path)
	}
	return fmt.Sprintf("MCP server %q needs your own sign-in (%s): open %s once, sign in, and call again", e.Server, e.Why, e.URL)
}

// ErrNoStore is the ledger not being open: tokens live there.
var ErrNoStore = errors.New("the gateway's ledger database, where people's upstream tokens are kept, is not open")

// linkTTL is how long a connect link, and an authorization begun from it,
// may take.
const linkTTL = 15 * time.Minute

// Link is unit's connect link to server.
func (b *Broker) Link(serverName, unit string) string {
	if b.opts.PublicURL == "" {
		return ""
	}
	sealed, err := seal(b.seal.links, linkAD, link{Server: serverName, Unit: unit, Expires: b.now().Add(linkTTL), Nonce: randomID()})
	if err != nil {
		return ""
	}
	return b.opts.PublicURL + Path + "link/" + sealed
}

func (b *Broker) notConnected(serverName, unit, why string) error {
	return &NotConnectedError{Server: serverName, URL: b.Link(serverName, unit), Why: why}
}

// Has reports whether server is an auth: oauth server of the broker.
func (b *Broker) Has(serverName string) bool { return b.servers[serverName] != nil }

// refreshAhead renews a token this long before it expires, so a call never
// reaches the server with one that lapses on the way.
const refreshAhead = 30 * time.Second

// refreshLease bounds how long one instance holds a refresh, on the
// database's clock; another waits for it, then takes over. It is well
// over refreshTimeout, so a slow refresh ends before anyone else may
// spend the same refresh token.
const (
	refreshLease   = 60 * time.Second
	refreshTimeout = 15 * time.Second
	// refreshWait is how long a caller waits for another instance's
	// refresh before giving up (the refresh ends within refreshTimeout).
	refreshWait = refreshTimeout + 5*time.Second
)

// Token is unit's access token to server, renewed first when it is about
// to expire or is rejected (the token the server just refused; "" for
// none). A caller who never connected, or whose grant the authorization
// server no longer renews, gets a *NotConnectedError.
func (b *Broker) Token(ctx context.Context, serverName, unit, rejected string) (string, error) {
	var st ledger.MCPUpstreamTokenStore
	if b.opts.Store != nil {
		st = b.opts.Store()
	}
	if st == nil {
		return "", ErrNoStore
	}
	deadline := time.Now().Add(refreshWait)
	for {
		row, found, err := st.MCPUpstreamToken(ctx, serverName, unit)
		if err != nil {
			return "", fmt.Errorf("reading the token: %w", err)
		}
		if !found {
			return "", b.notConnected(serverName, unit, "not connected yet")
		}
		set, err := b.openSet(serverName, unit, row.Sealed)
		if err != nil {
			return "", b.notConnected(serverName, unit, "the stored grant was made for another url or authorization_server of the server, or another site, or under another mcp_token_key")
		}
		now := b.now()
		fresh := set.Access != rejected && (set.Expiry.IsZero() || now.Add(refreshAhead).Before(set.Expiry))
		if fresh {
			return set.Access, nil
		}
		if set.Refresh == "" {
			if set.Access != rejected && now.Before(set.Expiry) {
				return set.Access, nil
			}
			return "", b.notConnected(serverName, unit, "the grant expired and has no refresh token")
		}
		claimed, err := st.ClaimMCPUpstreamRefresh(ctx, serverName, unit, row.Version, refreshLease)
		if errors.Is(err, ledger.ErrTokenChanged) {
			if !row.RefreshUntil.IsZero() {
				// Another instance holds the lease (the database judged
				// it): wait for its result.
				if time.Now().After(deadline) {
					return "", errors.New("another instance is still renewing the token; try again")
				}
				select {
				case <-ctx.Done():
					return "", ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
			continue
		}
		if err != nil {
			return "", fmt.Errorf("claiming the refresh: %w", err)
		}
		tok, err := b.refresh(ctx, st, serverName, unit, set, claimed)
		if errors.Is(err, ledger.ErrTokenChanged) {
			// The person connected again meanwhile: their new grant wins.
			continue
		}
		return tok, err
	}
}

// bind is what serverName's grants are sealed to besides its name.
func (b *Broker) bind(serverName string) string {
	if s := b.servers[serverName]; s != nil {
		return s.bind
	}
	return ""
}

func (b *Broker) sealSet(serverName, unit string, set tokenSet) (string, error) {
	return b.seal.sealTokens(serverName, unit, b.bind(serverName), set)
}

func (b *Broker) openSet(serverName, unit, sealed string) (tokenSet, error) {
	return b.seal.openTokens(serverName, unit, b.bind(serverName), sealed)
}

// refresh renews set under the claimed row and stores the result over it.
func (b *Broker) refresh(ctx context.Context, st ledger.MCPUpstreamTokenStore, serverName, unit string, set tokenSet, claimed ledger.MCPUpstreamToken) (string, error) {
	conf := &oauth2.Config{ClientID: set.ClientID, ClientSecret: set.ClientSecret,
		Endpoint: oauth2.Endpoint{TokenURL: set.TokenURL, AuthStyle: oauth2.AuthStyle(set.AuthStyle)}}
	rctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, b.hc), refreshTimeout)
	defer cancel()
	tok, err := conf.TokenSource(rctx, &oauth2.Token{RefreshToken: set.Refresh, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "unauthorized_client" || re.ErrorCode == "invalid_client") {
			// The grant ended (revoked, rotated away, the person gone):
			// only connecting again helps. Only the version this refresh
			// claimed is deleted: a grant the person made meanwhile (the
			// authorization server may have revoked the old one for it)
			// is read and used instead.
			gone, err := st.DeleteMCPUpstreamTokenAt(context.WithoutCancel(ctx), serverName, unit, claimed.Version)
			if err == nil && !gone {
				return "", ledger.ErrTokenChanged
			}
			return "", b.notConnected(serverName, unit, "the authorization server no longer renews the grant ("+errorCode(re.ErrorCode)+")")
		}
		// Give the lease back at once: the grant is still good.
		_, _ = st.SwapMCPUpstreamToken(context.WithoutCancel(ctx), ledger.MCPUpstreamToken{Server: serverName, Unit: unit, Sealed: claimed.Sealed, ExpiresAt: claimed.ExpiresAt, UpdatedAt: b.now()}, claimed.Version)
		return "", fmt.Errorf("renewing the token at the authorization server failed: %s", oauthReason(err))
	}
	set.Access, set.Type, set.Expiry = tok.AccessToken, tok.TokenType, b.expiry(tok)
	if tok.RefreshToken != "" {
		set.Refresh = tok.RefreshToken
	}
	sealed, err := b.sealSet(serverName, unit, set)
	if err != nil {
		return "", err
	}
	// Stored with the context's cancel ignored, and tried again a few
	// times on a database error: the old refresh token may be spent
	// already, so losing the new one would end the grant.
	row := ledger.MCPUpstreamToken{Server: serverName, Unit: unit, Sealed: sealed, ExpiresAt: set.Expiry, UpdatedAt: b.now()}
	for wait := 100 * time.Millisecond; ; wait *= 4 {
		_, err = st.SwapMCPUpstreamToken(context.WithoutCancel(ctx), row, claimed.Version)
		if err == nil || errors.Is(err, ledger.ErrTokenChanged) || wait > 2*time.Second {
			break
		}
		time.Sleep(wait)
	}
	if err != nil {
		if errors.Is(err, ledger.ErrTokenChanged) {
			return "", err
		}
		return "", fmt.Errorf("storing the renewed token: %w", err)
	}
	return set.Access, nil
}

// expiry is tok's expiry on the broker's clock (oauth2 computes it from
// expires_in on the wall clock).
func (b *Broker) expiry(tok *oauth2.Token) time.Time {
	if tok.Expiry.IsZero() {
		return time.Time{}
	}
	return b.now().Add(time.Until(tok.Expiry))
}

// oauthReason is an OAuth failure without anything the answer carried
// beyond its error code: a token endpoint's body is not shown.
func oauthReason(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return errorCode(re.ErrorCode)
		}
		if re.Response != nil {
			return re.Response.Status
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer in time"
	}
	return "the token endpoint could not be reached"
}
