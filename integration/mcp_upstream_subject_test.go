package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestMCPUpstreamGrantFollowsSubject: the real OpenID provider gives the
// address pat@example.com to two people (subjects pat1 and pat2), as when
// an email passes from someone who left to someone new. The first connects
// their upstream account through the gateway binary; the second, signed in
// with the same email, gets their own connect link, not the first
// person's upstream token, and their page lists the server as not
// connected; once they connect, each acts as their own account.
func TestMCPUpstreamGrantFollowsSubject(t *testing.T) {
	resource, as := peopleServer(t)
	models := fmt.Sprintf("model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\nmcp_servers:\n  people:\n    url: %s\n    auth: oauth\n", resource)
	s := startIdentityWith(t, identityOptions{models: models,
		ledgerLine: "ledger sqlite " + filepath.Join(t.TempDir(), "ledger.db") + "\n\t\tpublic_url " + gatewayBaseURL + "\n\t\tmcp_token_key {env.MCP_TOKEN_KEY}",
		env:        []string{"MCP_TOKEN_KEY=test-only-key-of-at-least-32-bytes-0123456789"}})
	g := s.g
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	whoami := func(key string) (string, error) {
		cs := mcpConnect(ctx, t, g.base+"/mcp", key)
		defer cs.Close()
		// A connected caller's tools/list opens their own session to the
		// server first.
		if _, err := cs.ListTools(ctx, nil); err != nil {
			return "", err
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "people-whoami", Arguments: map[string]any{}})
		if err != nil {
			return "", err
		}
		return res.Content[0].(*sdk.TextContent).Text, nil
	}
	// connectOwn completes the connect link of err (a call's -32032) in
	// user's own dashboard session, with their own upstream account.
	connectOwn := func(user string, err error) {
		var we *jsonrpc.Error
		link := connectLink.FindString(fmt.Sprint(err))
		if !errors.As(err, &we) || we.Code != -32032 || link == "" {
			t.Fatalf("%s: want -32032 with a connect link, got %v", user, err)
		}
		b := dashboardSignIn(t, s, user)
		b.jar.SetCookies(mustURL(t, as.URL), []*http.Cookie{{Name: fakes.OAuthUserCookie, Value: user + "-at-people"}})
		confirmConnect(t, g.base, b, link)
		if b.status != http.StatusOK || !strings.Contains(b.body, "Connected your account") {
			t.Fatalf("%s connecting: %d %.300s", user, b.status, b.body)
		}
	}

	keys := map[string]string{}
	for _, user := range []string{"pat1", "pat2"} {
		home := filepath.Join(t.TempDir(), user)
		browserLogin(t, s, home, user, "--browser")
		keys[user] = printKey(t, home)
	}
	cs := mcpConnect(ctx, t, g.base+"/mcp", keys["pat1"])
	mcpWaitTools(ctx, t, cs, "people-connect")
	_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "people-connect", Arguments: map[string]any{}})
	cs.Close()
	connectOwn("pat1", err)
	if got, err := whoami(keys["pat1"]); err != nil || got != "you are pat1-at-people" {
		t.Fatalf("pat1: %q %v", got, err)
	}

	// pat2 has the same email: not pat1's grant.
	_, err = whoami(keys["pat2"])
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != -32032 || strings.Contains(fmt.Sprint(err), "pat1") {
		t.Fatalf("pat2, with pat1's email, was not asked to connect: %v", err)
	}
	b := dashboardSignIn(t, s, "pat2")
	st, list := b.call(http.MethodGet, g.base+"/mcp-connect/?format=json", "")
	if data, _ := list["data"].([]any); st != http.StatusOK || len(data) != 1 || data[0].(map[string]any)["connected"] != false {
		t.Fatalf("pat2's connections: %d %v", st, list)
	}

	connectOwn("pat2", err)
	for _, user := range []string{"pat1", "pat2"} {
		if got, err := whoami(keys[user]); err != nil || got != "you are "+user+"-at-people" {
			t.Fatalf("%s after both connected: %q %v", user, got, err)
		}
	}
}
