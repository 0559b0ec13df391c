package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/secretscan"
)

// TestPromptAndCompletionArgumentsScreened: a prompts/get's arguments and
// a completion/complete's value and context pass the firewall step of
// tool calls: under redact the server sees a placeholder, under block the
// request is refused naming the rule (never the value), the server not
// asked; each detection is reported with the server and prompt.
func TestPromptAndCompletionArgumentsScreened(t *testing.T) {
	pat := fakePAT(t)
	for _, action := range []secretscan.Action{secretscan.Redact, secretscan.Block} {
		t.Run(string(action), func(t *testing.T) {
			up := featureServer(t, make(chan struct{}))
			ev := &secretEvents{}
			g := New(Options{Secrets: argScreen(t, action, ev), Servers: []*modellist.MCPServer{{Name: "docs", Transport: modellist.MCPTransportHTTP, URL: up.URL}}})
			g.Start()
			t.Cleanup(g.Close)
			gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"all": {KeyID: "k-all"}}))
			t.Cleanup(gw.Close)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx,
				&sdk.StreamableClientTransport{Endpoint: gw.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{"all"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			waitTools(t, cs, 2)

			gp, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "docs-review", Arguments: map[string]string{"lang": "go " + pat}})
			var seen []string
			if err == nil {
				seen = append(seen, gp.Messages[0].Content.(*sdk.TextContent).Text)
			}
			checkScreened(t, action, "prompts/get", seen, err, pat)
			cr, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "docs-review"},
				Argument: sdk.CompleteParamsArgument{Name: "lang", Value: "g " + pat}, Context: &sdk.CompleteContext{Arguments: map[string]string{"other": pat}}})
			seen = nil
			if err == nil {
				seen = cr.Completion.Values
			}
			checkScreened(t, action, "completion/complete", seen, err, pat)
			if _, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "docs-review"}); err != nil {
				t.Fatalf("prompts/get without arguments: %v", err)
			}
			evs := ev.all()
			if len(evs) < 3 || evs[0].Rule != "github-pat" || evs[0].Alias != "mcp:docs/prompt:review" || evs[len(evs)-1].Alias != "mcp:docs/completion:review" {
				t.Fatalf("reported %+v", evs)
			}
		})
	}
}

func checkScreened(t *testing.T, action secretscan.Action, method string, seen []string, err error, pat string) {
	t.Helper()
	if action == secretscan.Block {
		if err == nil || !strings.Contains(err.Error(), "github-pat") || strings.Contains(err.Error(), pat) {
			t.Fatalf("%s: blocked request answered %q %v", method, seen, err)
		}
		return
	}
	if err != nil || len(seen) != 1 || strings.Contains(seen[0], pat) || !strings.Contains(seen[0], "[REDACTED:github-pat") {
		t.Fatalf("%s: the server saw %q (%v)", method, seen, err)
	}
}
