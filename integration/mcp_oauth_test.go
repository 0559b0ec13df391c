package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// TestMCPOAuthSignIn: an MCP client given only the gateway's /mcp URL
// (no header) discovers the gateway as its authorization server, registers,
// signs the person in through the real OpenID provider, is handed a
// per-person key and calls a tool; the refresh token renews the key once.
// The client is the official Go SDK's OAuth client (auth.AuthorizationCodeHandler).
func TestMCPOAuthSignIn(t *testing.T) {
	srv := mcpEchoServer("internal")
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	up := httptest.NewServer(h)
	// Closed after the gateway stops (cleanups run last first): it holds
	// a session to the server until then.
	t.Cleanup(up.Close)
	// The client's loopback redirect target, as a native client runs one.
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "signed in") }))
	defer cb.Close()
	models := fmt.Sprintf("model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\nmcp_servers:\n  internal:\n    url: %s/mcp\n", up.URL)
	s := startIdentityWith(t, identityOptions{models: models})
	g := s.g

	code, hdr, _ := g.do(t, "POST", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	want := `Bearer resource_metadata="` + g.base + `/.well-known/oauth-protected-resource/mcp"`
	if code != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") != want {
		t.Fatalf("no key: %d, WWW-Authenticate %q; want 401 and %q", code, hdr.Get("WWW-Authenticate"), want)
	}

	b := newBrowserless(t)
	var clientID string
	fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, _ := url.Parse(args.URL)
		clientID = u.Query().Get("client_id")
		b.visit(http.MethodGet, args.URL, nil)
		b.signIn(s.issuer, "bob")
		if !strings.Contains(b.body, "Allow go-sdk-test") {
			return nil, fmt.Errorf("no consent page after sign-in: %s (%d) %.500s", b.last, b.status, b.body)
		}
		b.submit(nil) // the first button: Allow
		q := b.last.Query()
		if b.last.Host != strings.TrimPrefix(cb.URL, "http://") || q.Get("code") == "" {
			return nil, fmt.Errorf("the sign-in ended at %s (%d): %.500s", b.last, b.status, b.body)
		}
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
	oh, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{cb.URL + "/callback"}, ClientName: "go-sdk-test", TokenEndpointAuthMethod: "none"}},
		RedirectURL: cb.URL + "/callback", AuthorizationCodeFetcher: fetch, RequestRefreshToken: true,
		// A dialer of the test's own: the SDK then allows loopback addresses.
		Client: &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{}).DialContext}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-test"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: g.base + "/mcp", OAuthHandler: oh}, nil)
	if err != nil {
		t.Fatalf("connect with OAuth: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "internal-echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) == 0 || res.Content[0].(*sdk.TextContent).Text != "internal:hi" {
		t.Fatalf("tool answer %+v", res)
	}

	ts, err := oh.TokenSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	me := func(key string) (int, map[string]any) {
		code, _, body := g.do(t, "GET", "/v1/me", key, "")
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		return code, m
	}
	// Bob's key: his group's workspace, models and his own budget.
	isBob := func(m map[string]any) bool {
		return m["workspace_id"] == "eng" && fmt.Sprint(m["models"]) == "[echo]" && strings.Contains(fmt.Sprint(m["budgets"]), "scope_id:bob@example.com")
	}
	if code, m := me(tok.AccessToken); code != http.StatusOK || !isBob(m) {
		t.Fatalf("/v1/me with the MCP client's token: %d %v", code, m)
	}
	if tok.RefreshToken == "" || tok.Expiry.After(time.Now().Add(61*time.Minute)) {
		t.Fatalf("want a short-lived key with a refresh token: expiry %v, refresh %t", tok.Expiry, tok.RefreshToken != "")
	}

	refresh := func() (int, map[string]any) {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {clientID}}
		resp, err := http.PostForm(g.base+"/auth/oidc/mcp/token", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	code, renewed := refresh()
	key, _ := renewed["access_token"].(string)
	if code != http.StatusOK || key == "" || key == tok.AccessToken {
		t.Fatalf("refresh: %d %v", code, renewed)
	}
	if code, m := me(key); code != http.StatusOK || !isBob(m) {
		t.Fatalf("/v1/me with the renewed key: %d %v", code, m)
	}
	if code, m := refresh(); code != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("a refresh token used twice: %d %v, want 400 invalid_grant", code, m)
	}
}
