package upstreamauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
)

// TestDiscoveryFailures: what a person sees when the server's or the
// authorization server's metadata lets the gateway down names the server
// and what the operator sets instead.
func TestDiscoveryFailures(t *testing.T) {
	var asMeta map[string]any
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(asMeta)
	})
	base := map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token", "code_challenge_methods_supported": []string{"S256"}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range base {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	for _, tc := range []struct {
		name string
		as   string // authorization_server; "" discovers
		meta map[string]any
		want string
	}{
		{"no resource metadata, and the fix", "", base, "or set authorization_server on its mcp_servers entry"},
		{"no resource metadata", "", base, "protected-resource metadata (RFC 9728): GetProtectedResourceMetadata"},
		{"no registration", srv.URL, base, "offers no dynamic client registration; register the gateway there (redirect URI https://gw.example/mcp-connect/callback/gh) and set client_id"},
		{"no S256", srv.URL, with("code_challenge_methods_supported", []string{"plain"}), "does not offer PKCE S256"},
		{"another issuer", srv.URL, with("issuer", "https://evil.example"), "does not match issuer"},
		{"a script URL", srv.URL, with("authorization_endpoint", "javascript:alert(1)"), `MCP server "gh": authorization server`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asMeta = tc.meta
			st, _ := sqliteStore(t)
			b, err := New(Options{Key: testKey, PublicURL: testPublic, Store: func() ledger.MCPUpstreamTokenStore { return st },
				Servers: []*modellist.MCPServer{{Name: "gh", URL: srv.URL + "/mcp", Auth: modellist.MCPAuthOAuth, OAuth: &modellist.MCPOAuth{AuthorizationServer: tc.as}}}})
			if err != nil {
				t.Fatal(err)
			}
			w := confirmAs(t, b, Path+"server/gh", signedIn("bob"))
			var e struct {
				Error struct{ Message string }
			}
			_ = json.Unmarshal(w.Body.Bytes(), &e)
			body := e.Error.Message
			if w.Code != http.StatusBadGateway || !strings.Contains(body, tc.want) || !strings.Contains(body, `MCP server "gh"`) {
				t.Fatalf("%d %s; want %q", w.Code, w.Body, tc.want)
			}
		})
	}
}

// TestConfiguredSecretOnlyToNamedIssuer (hostile review H8): a
// client_secret without authorization_server would go to whatever
// authorization server the MCP server's own metadata names; discovery
// refuses it before asking anyone, naming the fix.
func TestConfiguredSecretOnlyToNamedIssuer(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	b, err := New(Options{Servers: []*modellist.MCPServer{{Name: "idp", URL: srv.URL + "/mcp", Auth: modellist.MCPAuthOAuth,
		OAuth: &modellist.MCPOAuth{ClientID: "corp-client", ClientSecret: "corp-SECRET"}}}, Key: testKey, PublicURL: testPublic})
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.discover(context.Background(), b.servers["idp"])
	if d != nil || err == nil || !strings.Contains(err.Error(), "set authorization_server") || strings.Contains(err.Error(), "corp-SECRET") || asked.Load() != 0 {
		t.Fatalf("discovery with a secret and no authorization_server: %+v %v (%d requests)", d, err, asked.Load())
	}
}

// TestDiscoverySingleFlight (hostile review H11): many connects at once
// on a cold cache register the gateway at the authorization server once,
// not once each.
func TestDiscoverySingleFlight(t *testing.T) {
	as := fakes.NewOAuthServer(resource)
	defer as.Close()
	var registrations atomic.Int64
	hc := &http.Client{Transport: countingTransport{n: &registrations, base: http.DefaultTransport}}
	st, _ := sqliteStore(t)
	b, err := New(Options{Servers: []*modellist.MCPServer{{Name: "gh", URL: resource, Auth: modellist.MCPAuthOAuth, OAuth: &modellist.MCPOAuth{AuthorizationServer: as.URL}}},
		Key: testKey, PublicURL: testPublic, HTTPClient: hc, Store: func() ledger.MCPUpstreamTokenStore { return st }})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			if d, err := b.discover(context.Background(), b.servers["gh"]); err == nil {
				ids[i] = d.clientID
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("client ids %q", ids)
		}
	}
	if n := registrations.Load(); n != 1 {
		t.Fatalf("%d registrations for 8 concurrent connects; want 1", n)
	}
}

// countingTransport counts the registration requests it carries.
type countingTransport struct {
	n    *atomic.Int64
	base http.RoundTripper
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/register") {
		c.n.Add(1)
	}
	return c.base.RoundTrip(r)
}
