package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/secretscan"
)

// metaServer answers each request with the _meta (and URI or name) it
// received, and counts the requests it served.
func metaServer(t *testing.T, served *atomic.Int32) *httptest.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "docs"}, nil)
	seen := func(meta sdk.Meta, name string) string {
		served.Add(1)
		b, _ := json.Marshal(meta)
		return name + " " + string(b)
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo"}, func(_ context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: seen(req.Params.Meta, in.Text)}}}, nil, nil
	})
	s.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "doc://page/{n}", Name: "page"}, func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: seen(req.Params.Meta, req.Params.URI)}}}, nil
	})
	s.AddPrompt(&sdk.Prompt{Name: "review"}, func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: seen(req.Params.Meta, req.Params.Name)}}}}, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv
}

// TestMetaURIAndPromptNameScreened (H12-2): a credential in a request's
// _meta (tools/call, resources/read, prompts/get) reaches the server as a
// placeholder under redact and is refused under block; one in a
// resources/read URI or a prompt name, which no placeholder can stand in
// for, is refused under both, naming the rule and never the value, and
// the server is not asked.
func TestMetaURIAndPromptNameScreened(t *testing.T) {
	pat := fakePAT(t)
	for _, action := range []secretscan.Action{secretscan.Redact, secretscan.Block} {
		t.Run(string(action), func(t *testing.T) {
			var served atomic.Int32
			up := metaServer(t, &served)
			ev := &secretEvents{}
			g := New(Options{Secrets: argScreen(t, action, ev), Servers: []*modellist.MCPServer{{Name: "docs", Transport: modellist.MCPTransportHTTP, URL: up.URL}}})
			g.Start()
			t.Cleanup(g.Close)
			gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"alice": {KeyID: "k-alice", Person: "alice@example.com"}}))
			t.Cleanup(gw.Close)
			cs := connect(t, gw.URL+"/mcp", "alice")
			waitTools(t, cs, 1)
			ctx := context.Background()
			meta := sdk.Meta{"note": "deploy with " + pat, "progressToken": "p-1"}

			refused := func(what string, err error) {
				t.Helper()
				if err == nil || !strings.Contains(err.Error(), "github-pat") || strings.Contains(err.Error(), pat) {
					t.Errorf("%s: %v, want a refusal naming github-pat without the value", what, err)
				}
			}
			// passed is what the server answered: under redact, with the
			// placeholder in place of the credential and the rest of
			// _meta as sent (the progress token, which the gateway relays
			// under its own).
			passed := func(what, got string, err error) {
				t.Helper()
				if err != nil || strings.Contains(got, pat) || !strings.Contains(got, "[REDACTED:github-pat") || !strings.Contains(got, `"progressToken":"mg-`) {
					t.Errorf("%s: the server saw %q (%v)", what, got, err)
				}
			}
			call, err := cs.CallTool(ctx, &sdk.CallToolParams{Meta: meta, Name: "docs-echo", Arguments: map[string]any{"text": "hi"}})
			read, rerr := cs.ReadResource(ctx, &sdk.ReadResourceParams{Meta: meta, URI: "docs-doc://page/1"})
			prompt, perr := cs.GetPrompt(ctx, &sdk.GetPromptParams{Meta: meta, Name: "docs-review"})
			if action == secretscan.Block {
				refused("tools/call _meta", err)
				refused("resources/read _meta", rerr)
				refused("prompts/get _meta", perr)
			} else {
				if err == nil {
					passed("tools/call _meta", call.Content[0].(*sdk.TextContent).Text, err)
				} else {
					t.Errorf("tools/call _meta: %v", err)
				}
				if rerr == nil {
					passed("resources/read _meta", read.Contents[0].Text, rerr)
				} else {
					t.Errorf("resources/read _meta: %v", rerr)
				}
				if perr == nil {
					passed("prompts/get _meta", prompt.Messages[0].Content.(*sdk.TextContent).Text, perr)
				} else {
					t.Errorf("prompts/get _meta: %v", perr)
				}
			}
			before := served.Load()
			_, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "docs-doc://page/1?token=" + pat})
			refused("resources/read URI", err)
			_, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "docs-review" + pat})
			refused("prompts/get name", err)
			if got := served.Load(); got != before {
				t.Errorf("the server was asked %d times for a URI or name holding a credential", got-before)
			}
			for _, e := range ev.all() {
				if e.Rule != "github-pat" || e.KeyID != "k-alice" {
					t.Errorf("reported %+v", e)
				}
			}
			if n := len(ev.all()); n != 5 {
				t.Errorf("%d detections reported, want 5", n)
			}
		})
	}
}
