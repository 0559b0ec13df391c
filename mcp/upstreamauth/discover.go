package upstreamauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// discovered is what the gateway learnt of one server's authorization
// server, and the client it is there.
type discovered struct {
	issuer    string
	resource  string
	authURL   string
	tokenURL  string
	scopes    string
	clientID  string
	secret    string
	authStyle oauth2.AuthStyle
	// issRequired is the authorization server saying it sends iss with
	// every answer (RFC 9207): one without is then refused.
	issRequired bool
	at          time.Time
}

// discoveryTTL is how long discovery is kept in memory (the registered
// client is kept in the ledger: client.go); a failure is kept failTTL, so
// a broken server is not asked on every click.
const (
	discoveryTTL = 10 * time.Minute
	failTTL      = 10 * time.Second
)

// cache is the per-process discovery, per server.
type cache struct {
	mu   sync.Mutex
	byS  map[string]*discovered
	errs map[string]failure
	// running is the discovery under way per server: the connects that
	// arrive meanwhile wait for it instead of registering the gateway
	// again each.
	running map[string]*flight
}

type flight struct {
	done chan struct{}
	d    *discovered
	err  error
}

type failure struct {
	err error
	at  time.Time
}

// discover finds s's authorization server and a client there: RFC 9728
// protected-resource metadata (named by the server's 401
// WWW-Authenticate resource_metadata, else at its well-known paths),
// unless authorization_server is configured; RFC 8414 metadata (or
// OpenID Connect discovery's); the configured client, else one registered
// by RFC 7591.
func (b *Broker) discover(ctx context.Context, s *server) (*discovered, error) {
	now := b.now()
	b.cache.mu.Lock()
	if d := b.cache.byS[s.name]; d != nil && now.Sub(d.at) < discoveryTTL {
		b.cache.mu.Unlock()
		return d, nil
	}
	if f, ok := b.cache.errs[s.name]; ok && now.Sub(f.at) < failTTL {
		b.cache.mu.Unlock()
		return nil, f.err
	}
	if f := b.cache.running[s.name]; f != nil {
		b.cache.mu.Unlock()
		select {
		case <-f.done:
			return f.d, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	if b.cache.running == nil {
		b.cache.running = map[string]*flight{}
	}
	b.cache.running[s.name] = f
	b.cache.mu.Unlock()
	// Not cut short by this caller leaving: others wait for the result.
	f.d, f.err = b.discoverNow(context.WithoutCancel(ctx), s)
	b.cache.mu.Lock()
	defer b.cache.mu.Unlock()
	delete(b.cache.running, s.name)
	close(f.done)
	if f.err != nil {
		b.cache.errs[s.name] = failure{f.err, now}
		return nil, f.err
	}
	f.d.at = now
	b.cache.byS[s.name] = f.d
	delete(b.cache.errs, s.name)
	return f.d, nil
}

func (b *Broker) discoverNow(ctx context.Context, s *server) (*discovered, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	d := &discovered{resource: s.url, issuer: s.oauth.AuthorizationServer}
	var scopes []string
	if d.issuer == "" && s.oauth.ClientSecret != "" {
		// The configuration refuses this too: the MCP server's metadata
		// must not choose where the operator's secret goes.
		return nil, fmt.Errorf("MCP server %q: a client_secret is sent only to an authorization server the configuration names; set authorization_server on its mcp_servers entry", s.name)
	}
	if d.issuer == "" {
		prm, err := b.resourceMetadata(ctx, s.url)
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: its protected-resource metadata (RFC 9728): %v; or set authorization_server on its mcp_servers entry", s.name, err)
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("MCP server %q: its protected-resource metadata names no authorization server; set authorization_server on its mcp_servers entry", s.name)
		}
		d.issuer, d.resource, scopes = prm.AuthorizationServers[0], prm.Resource, prm.ScopesSupported
	}
	asm, err := b.serverMetadata(ctx, d.issuer)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: authorization server %s: %v", s.name, d.issuer, err)
	}
	if !containsString(asm.CodeChallengeMethodsSupported, "S256") {
		return nil, fmt.Errorf("MCP server %q: authorization server %s does not offer PKCE S256, which the gateway requires", s.name, d.issuer)
	}
	d.authURL, d.tokenURL, d.issRequired = asm.AuthorizationEndpoint, asm.TokenEndpoint, asm.AuthorizationResponseIssParameterSupported
	if len(s.oauth.Scopes) > 0 {
		scopes = s.oauth.Scopes
	}
	d.scopes = strings.Join(scopes, " ")
	d.clientID, d.secret = s.oauth.ClientID, s.oauth.ClientSecret
	if d.clientID == "" {
		if asm.RegistrationEndpoint == "" {
			return nil, fmt.Errorf("MCP server %q: authorization server %s offers no dynamic client registration; register the gateway there (redirect URI %s) and set client_id on its mcp_servers entry", s.name, d.issuer, b.redirect(s.name))
		}
		c, err := b.client(ctx, s, d.issuer, asm.RegistrationEndpoint, d.scopes)
		if err != nil {
			return nil, err
		}
		d.clientID, d.secret = c.ID, c.Secret
	}
	d.authStyle = oauth2.AuthStyleInParams
	if d.secret != "" && (len(asm.TokenEndpointAuthMethodsSupported) == 0 || containsString(asm.TokenEndpointAuthMethodsSupported, "client_secret_basic")) {
		d.authStyle = oauth2.AuthStyleInHeader
	}
	return d, nil
}

// resourceMetadata reads the server's RFC 9728 metadata: from the URL its
// 401 names, else the path-inserted and root well-known URLs.
func (b *Broker) resourceMetadata(ctx context.Context, resource string) (*oauthex.ProtectedResourceMetadata, error) {
	var tried []string
	if named := b.challengeMetadata(ctx, resource); named != "" {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, named, resource, b.hc)
		if err == nil {
			return prm, nil
		}
		tried = append(tried, err.Error())
	}
	u, err := url.Parse(resource)
	if err != nil {
		return nil, err
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/"), "/.well-known/oauth-protected-resource"} {
		m := *u
		m.Path, m.RawPath, m.RawQuery = p, "", ""
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, m.String(), resource, b.hc)
		if err == nil {
			return prm, nil
		}
		tried = append(tried, err.Error())
	}
	return nil, errors.New(strings.Join(tried, "; "))
}

// challengeMetadata asks the server without a token and returns the
// resource_metadata of its Bearer challenge, "" when it gives none.
func (b *Broker) challengeMetadata(ctx context.Context, resource string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		return ""
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := b.hc.Do(req)
	if err != nil {
		return ""
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return ""
	}
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return ""
	}
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "bearer") && c.Params["resource_metadata"] != "" {
			return c.Params["resource_metadata"]
		}
	}
	return ""
}

// serverMetadata reads RFC 8414 metadata at the issuer's path-inserted and
// root well-known URLs, then OpenID Connect discovery's.
func (b *Broker) serverMetadata(ctx context.Context, issuer string) (*oauthex.AuthServerMeta, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, errors.New("not a URL")
	}
	path := strings.TrimSuffix(u.Path, "/")
	var urls []string
	for _, wk := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		m := *u
		m.Path, m.RawPath = wk+path, ""
		urls = append(urls, m.String())
	}
	if path != "" {
		urls = append(urls, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration")
	}
	var tried []string
	for _, mu := range urls {
		asm, err := oauthex.GetAuthServerMeta(ctx, mu, issuer, b.hc)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		if asm != nil {
			if asm.AuthorizationEndpoint == "" || asm.TokenEndpoint == "" {
				return nil, errors.New("its metadata lacks authorization_endpoint or token_endpoint")
			}
			return asm, nil
		}
	}
	if len(tried) == 0 {
		return nil, errors.New("no RFC 8414 or OpenID Connect metadata found")
	}
	return nil, errors.New(strings.Join(tried, "; "))
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
