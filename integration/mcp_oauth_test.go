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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
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

// TestMCPOAuthClaudeCode: real Claude Code, given the gateway's /mcp URL
// with no header (`claude mcp add --transport http gw …`), signs in with
// `claude mcp login gw --no-browser` (it prints the authorization URL and
// waits on its loopback callback; the test's cookie-jar browser walks the
// real provider's login and the gateway's consent page to it), then a
// print-mode run calls the tool through the gateway with the key it got.
func TestMCPOAuthClaudeCode(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) (util-linux) is missing: Claude Code signs in to an MCP server only on a terminal, which it provides")
	}
	probe := probeServer(t)
	script := &scriptedBackend{pick: pickProbe}
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	s := startIdentityWith(t, identityOptions{models: scriptedProbeModels(up.URL, probe.URL)})
	g := s.g
	home, project := t.TempDir(), t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	add := exec.CommandContext(ctx, claude, "mcp", "add", "--scope", "local", "--transport", "http", "gw", g.base+"/mcp")
	add.Dir, add.Env = project, env
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("claude mcp add: %v\n%s", err, out)
	}

	// The "browser" Claude Code opens: a script that hands the URL to the test.
	opened := filepath.Join(home, "opened-url")
	browser := filepath.Join(home, "browser.sh")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\nprintf '%s\\n' \"$1\" >>"+opened+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	// It signs in only on a terminal: script(1) gives it one.
	login := exec.CommandContext(ctx, "script", "-qfec", claude+" mcp login gw", "/dev/null")
	login.Dir, login.Env, login.WaitDelay = project, append(env, "BROWSER="+browser, "DISPLAY=:0"), 5*time.Second
	var out syncBuffer
	login.Stdout, login.Stderr = &out, &out
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	authorizeURL := regexp.MustCompile(`https?://\S+/auth/oidc/mcp/authorize\?\S+`)
	var link string
	found := func() bool {
		b, _ := os.ReadFile(opened)
		link = authorizeURL.FindString(string(b) + " " + out.String())
		return link != ""
	}
	for try := 0; try < 6 && link == ""; try++ {
		testwait.Until(found)
	}
	if link == "" {
		t.Fatalf("claude mcp login printed no authorization URL:\n%s", out.String())
	}
	b := newBrowserless(t)
	b.visit(http.MethodGet, link, nil)
	b.signIn(s.issuer, "alice")
	if !strings.Contains(b.body, "Allow") || !strings.Contains(b.body, "alice@example.com") {
		t.Fatalf("no consent page after sign-in: %s (%d) %.800s", b.last, b.status, b.body)
	}
	b.submit(nil)
	if !isLoopback(b.last.Hostname()) || b.last.Path != "/callback" {
		t.Fatalf("consent ended at %s (%d), not Claude Code's callback", b.last, b.status)
	}
	if err := login.Wait(); err != nil {
		t.Fatalf("claude mcp login: %v\n%s", err, out.String())
	}
	t.Logf("claude mcp login:\n%s", out.String())

	res := runClaude(t, claude, claudeRun{
		prompt: "Call the gateway probe tool with the word kiwi, then say you are done.",
		dir:    project,
		env:    []string{"HOME=" + home, "ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey, "ANTHROPIC_MODEL=coder"},
		args:   []string{"--allowedTools", "mcp__gw__internal-" + probeTool},
	})
	if !strings.Contains(res.Result, finalReply) {
		t.Errorf("result %q lacks the backend's final text", res.Result)
	}
	answered := false
	for _, c := range script.requests() {
		if _, content, ok := c.req.toolResult(); ok && strings.Contains(content, probeAnswer) {
			answered = true
		}
	}
	if !answered {
		t.Fatalf("the model never got the probe's answer %q back", probeAnswer)
	}
	// The MCP call was made with the key the sign-in minted for Alice
	// (not the static key the model calls use): her group's workspace.
	n := 0
	for _, r := range g.ledgerRecords(t) {
		if r.Endpoint == ledger.EndpointMCP && r.UpstreamModel == probeTool {
			n++
			if r.Outcome != ledger.OutcomeOK || !strings.HasPrefix(r.KeyID, "apikey_") || r.Workspace != "eng" {
				t.Errorf("mcp record %+v: want ok, a minted key, workspace eng", r)
			}
		}
	}
	if n == 0 {
		t.Fatal("no ledger record with endpoint mcp for the probe call")
	}
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
