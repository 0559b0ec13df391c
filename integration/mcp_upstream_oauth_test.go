package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/modelgate/modelgate/internal/fakes"
)

// peopleServer is an MCP server that requires OAuth tokens of as (RFC 9728
// metadata, a Bearer challenge naming it) and whose whoami tool answers
// whose token the call came with.
func peopleServer(t *testing.T) (resource string, as *fakes.OAuthServer) {
	t.Helper()
	mux := http.NewServeMux()
	up := httptest.NewServer(mux)
	resource = up.URL + "/mcp"
	as = fakes.NewOAuthServer(resource)
	srv := sdk.NewServer(&sdk.Implementation{Name: "people"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami", Description: "whose token this call carries"}, func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "you are " + req.Extra.TokenInfo.UserID}}}, nil, nil
	})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		who, ok := as.Who(token)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: who, Expiration: time.Now().Add(time.Hour)}, nil
	}
	meta := up.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: meta})(
		sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{as.URL}}))
	// Closed after the gateway stops (cleanups run last first).
	t.Cleanup(up.Close)
	t.Cleanup(as.Close)
	return resource, as
}

var connectLink = regexp.MustCompile(`http://127\.0\.0\.1:\d+/mcp-connect/link/[A-Za-z0-9_-]+`)

// TestMCPUpstreamOAuthTwoPeople: an upstream MCP server that requires
// OAuth, behind the gateway binary with auth: oauth. Two people signed in
// with the real OpenID provider call it with their own per-person keys:
// each first gets a readable error with their connect link, completes the
// authorization (PKCE, resource, their own upstream account) in their own
// dashboard session, and then sees their own identity from the upstream.
// A link made for one cannot be completed by the other. A token the
// upstream stops accepting is renewed with the refresh token without the
// caller noticing. No token appears in any answer, the gateway's log or
// the ledger.
func TestMCPUpstreamOAuthTwoPeople(t *testing.T) {
	resource, as := peopleServer(t)
	ledgerPath := filepath.Join(t.TempDir(), "ledger.db")
	models := fmt.Sprintf("model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\nmcp_servers:\n  people:\n    url: %s\n    auth: oauth\n", resource)
	s := startIdentityWith(t, identityOptions{models: models,
		ledgerLine: "ledger sqlite " + ledgerPath + "\n\t\tpublic_url " + gatewayBaseURL + "\n\t\tmcp_token_key {env.MCP_TOKEN_KEY}",
		env:        []string{"MCP_TOKEN_KEY=test-only-key-of-at-least-32-bytes-0123456789"}})
	g := s.g
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var answers strings.Builder // everything the clients were answered

	type person struct {
		user, upstream, key string
		browser             *browserless
	}
	people := []*person{{user: "bob", upstream: "bob-at-people"}, {user: "alice", upstream: "alice-at-people"}}
	for _, p := range people {
		home := filepath.Join(t.TempDir(), p.user)
		browserLogin(t, s, home, p.user, "--browser")
		p.key = printKey(t, home)
	}
	call := func(cs *sdk.ClientSession, tool string) (string, error) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil {
			answers.WriteString(err.Error())
			return "", err
		}
		text := res.Content[0].(*sdk.TextContent).Text
		answers.WriteString(text)
		return text, nil
	}
	linkOf := func(err error) string {
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != -32032 || !strings.Contains(we.Message, `MCP server "people" needs your own sign-in`) {
			t.Fatalf("want MCP error -32032 naming the server, got %v", err)
		}
		link := connectLink.FindString(we.Message)
		if link == "" || !strings.Contains(string(we.Data), link) {
			t.Fatalf("no connect link in %q (data %s)", we.Message, we.Data)
		}
		return link
	}

	sessions := map[string]*sdk.ClientSession{}
	for _, p := range people {
		cs := mcpConnect(ctx, t, g.base+"/mcp", p.key)
		sessions[p.user] = cs
		mcpWaitTools(ctx, t, cs, "people-connect")
		_, err := call(cs, "people-connect")
		link := linkOf(err)
		if p.user == "bob" {
			// Bob forwards his link to Alice: her session cannot complete it.
			eve := dashboardSignIn(t, s, "alice")
			eve.jar.SetCookies(mustURL(t, as.URL), []*http.Cookie{{Name: fakes.OAuthUserCookie, Value: "alice-at-people"}})
			eve.visit(http.MethodGet, link, nil)
			if eve.status != http.StatusForbidden || !strings.Contains(eve.body, "someone else") {
				t.Fatalf("Alice opening Bob's link: %d %.300s", eve.status, eve.body)
			}
		}
		b := dashboardSignIn(t, s, p.user)
		p.browser = b
		b.jar.SetCookies(mustURL(t, as.URL), []*http.Cookie{{Name: fakes.OAuthUserCookie, Value: p.upstream}})
		confirmConnect(t, g.base, b, link)
		if b.status != http.StatusOK || !strings.Contains(b.body, "Connected your account to MCP server people") {
			t.Fatalf("%s connecting: %s %d %.500s", p.user, b.last, b.status, b.body)
		}
		answers.WriteString(b.body)
		// The link works once.
		confirmConnect(t, g.base, b, link)
		if b.status != http.StatusConflict {
			t.Fatalf("%s using the link twice: %d %.300s", p.user, b.status, b.body)
		}
		answers.WriteString(b.body)
	}
	for _, p := range people {
		cs := sessions[p.user]
		if p.user == "bob" {
			// The first session opened lists the server's tools for everyone.
			if got, err := call(cs, "people-connect"); err != nil || !strings.Contains(got, "connected to people") {
				t.Fatalf("connect after connecting: %q %v", got, err)
			}
		}
		mcpWaitTools(ctx, t, cs, "people-whoami")
		if got, err := call(cs, "people-whoami"); err != nil || got != "you are "+p.upstream {
			t.Fatalf("%s's whoami: %q %v", p.user, got, err)
		}
	}

	// The upstream stops accepting every token it issued: the gateway
	// renews each person's with their refresh token and the call goes on.
	as.ExpireAll()
	for _, p := range people {
		if got, err := call(sessions[p.user], "people-whoami"); err != nil || got != "you are "+p.upstream {
			t.Fatalf("%s's whoami after expiry: %q %v", p.user, got, err)
		}
	}
	if served, reused := as.Refreshes(); served != 2 || reused != 0 {
		t.Fatalf("refresh grants %d (want one per person), spent refresh tokens reused %d", served, reused)
	}

	// A reload starts a new MCP gateway that has listed nothing: a
	// connected person's first tools/list opens their own session and
	// shows the server's tools at once; their grant outlived the reload.
	g.reload(t)
	for _, p := range people {
		sessions[p.user].Close()
		cs := mcpConnect(ctx, t, g.base+"/mcp", p.key)
		sessions[p.user] = cs
		res, err := cs.ListTools(ctx, nil)
		if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "people-whoami" {
			t.Fatalf("%s's first tools/list after a reload: %v %v", p.user, res, err)
		}
		if got, err := call(cs, "people-whoami"); err != nil || got != "you are "+p.upstream {
			t.Fatalf("%s's whoami after a reload: %q %v", p.user, got, err)
		}
	}

	// Bob's dashboard: the server connected; disconnect forgets the grant,
	// and his next call asks him to connect again.
	bob := people[0]
	st, list := bob.browser.call(http.MethodGet, g.base+"/mcp-connect/?format=json", "")
	if data, _ := list["data"].([]any); st != http.StatusOK || len(data) != 1 || data[0].(map[string]any)["connected"] != true {
		t.Fatalf("bob's connections: %d %v", st, list)
	}
	_, me := bob.browser.call(http.MethodGet, g.base+"/v1/me", "")
	if st, out := bob.browser.call(http.MethodPost, g.base+"/mcp-connect/disconnect/people", "", "X-CSRF-Token", fmt.Sprint(me["csrf_token"])); st != http.StatusOK {
		t.Fatalf("disconnect: %d %v", st, out)
	}
	_, err := call(sessions["bob"], "people-whoami")
	link := linkOf(err)
	if got, err := call(sessions["alice"], "people-whoami"); err != nil || got != "you are alice-at-people" {
		t.Fatalf("alice after bob disconnected: %q %v", got, err)
	}
	// The disconnect revoked Bob's refresh and access tokens at the
	// authorization server (RFC 7009), as the client they were issued to.
	if revoked := as.Revoked(); len(revoked) != 2 || !strings.Contains(revoked[0], " refresh_token ") || !strings.Contains(revoked[1], " access_token ") {
		t.Fatalf("revocations at the authorization server: %d", len(revoked))
	}
	// Bob connects again after the reload: the client the gateway
	// registered before it is read from the ledger, not registered anew.
	confirmConnect(t, g.base, bob.browser, link)
	if bob.browser.status != http.StatusOK || !strings.Contains(bob.browser.body, "Connected your account") {
		t.Fatalf("bob connecting again: %d %.300s", bob.browser.status, bob.browser.body)
	}
	if got, err := call(sessions["bob"], "people-whoami"); err != nil || got != "you are bob-at-people" {
		t.Fatalf("bob after connecting again: %q %v", got, err)
	}
	if n := as.Registrations(); n != 1 {
		t.Fatalf("the gateway registered %d clients at the authorization server; want one, kept across the reload", n)
	}

	// Each connect and the disconnect are in the audit log, by person.
	code, _, body := g.do(t, http.MethodGet, "/v1/organizations/audit_log?limit=100", adminKey, "")
	answers.Write(body)
	for _, want := range []string{`"action":"mcp.upstream.connected","target":"people"`, `"actor":"alice@example.com"`, `"action":"mcp.upstream.disconnected"`} {
		if code != http.StatusOK || !strings.Contains(strings.ReplaceAll(string(body), " ", ""), want) {
			t.Fatalf("audit log (%d) lacks %s: %.1500s", code, want, body)
		}
	}

	for _, cs := range sessions {
		cs.Close()
	}
	g.stop(t)
	var db strings.Builder
	for _, f := range []string{ledgerPath, ledgerPath + "-wal"} {
		if raw, err := os.ReadFile(f); err == nil {
			db.Write(raw)
		}
	}
	if !strings.Contains(db.String(), "mcp_upstream_tokens") {
		t.Fatal("scanned a ledger without the token table")
	}
	scanned := map[string]string{"the ledger": db.String(), "the gateway's log": g.stderr.String(), "an answer or page": answers.String()}
	issued := as.Issued()
	if len(issued) < 8 {
		t.Fatalf("the authorization server issued %d tokens; want at least 8", len(issued))
	}
	for _, tok := range issued {
		for where, text := range scanned {
			if strings.Contains(text, tok) {
				t.Fatalf("an upstream token is in %s", where)
			}
		}
	}
}

// sealedLink is the link a connect page's confirmation button posts.
var sealedLink = regexp.MustCompile(`data-link="([A-Za-z0-9_-]+)"`)

// confirmConnect opens a connect link in b's session (a page that starts
// nothing), checks that its confirmation without the session's CSRF token
// is refused, posts it with the token as the page's button does, and
// follows the authorization URL it answers to the end.
func confirmConnect(t *testing.T, base string, b *browserless, link string) {
	t.Helper()
	b.visit(http.MethodGet, link, nil)
	m := sealedLink.FindStringSubmatch(b.body)
	if b.status != http.StatusOK || m == nil || !strings.Contains(b.body, "Connect my account") {
		t.Fatalf("connect page: %s %d %.500s", b.last, b.status, b.body)
	}
	body := `{"link":"` + m[1] + `"}`
	if st, out := b.call(http.MethodPost, base+"/mcp-connect/start", body); st != http.StatusForbidden {
		t.Fatalf("a confirmation without the CSRF token: %d %v", st, out)
	}
	_, me := b.call(http.MethodGet, base+"/v1/me", "")
	st, out := b.call(http.MethodPost, base+"/mcp-connect/start", body, "X-CSRF-Token", fmt.Sprint(me["csrf_token"]))
	to, _ := out["redirect"].(string)
	if st != http.StatusOK || to == "" {
		t.Fatalf("confirming: %d %v", st, out)
	}
	b.visit(http.MethodGet, to, nil)
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
