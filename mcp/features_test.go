package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// featureServer is a Go SDK server with a resource, a template, a prompt,
// completions, a tool that reports progress and one that waits until it
// is cancelled (it closes cancelled when its context ends).
func featureServer(t *testing.T, cancelled chan struct{}) *httptest.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "docs"}, &sdk.ServerOptions{
		CompletionHandler: func(_ context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{req.Params.Ref.Type + ":" + req.Params.Ref.Name + req.Params.Ref.URI + ":" + req.Params.Argument.Value + "x"}}}, nil
		},
	})
	s.AddResource(&sdk.Resource{URI: "doc://readme", Name: "readme", MIMEType: "text/plain"}, func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "read me"}}}, nil
	})
	s.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "doc://page/{n}", Name: "page"}, func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "page " + strings.TrimPrefix(req.Params.URI, "doc://page/")}}}, nil
	})
	s.AddPrompt(&sdk.Prompt{Name: "review", Arguments: []*sdk.PromptArgument{{Name: "lang"}}}, func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "review " + req.Params.Arguments["lang"]}}}}, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "slow"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			for i := 1; i <= 2; i++ {
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 2})
			}
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "hang"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, nil, ctx.Err()
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv
}

func TestGatewayResourcesPromptsCompletions(t *testing.T) {
	cancelled := make(chan struct{})
	up := featureServer(t, cancelled)
	g := New(Options{Servers: []*modellist.MCPServer{{Name: "docs", Transport: modellist.MCPTransportHTTP, URL: up.URL}}})
	g.Start()
	t.Cleanup(g.Close)
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{
		"all":      {KeyID: "k-all"},
		"toolonly": {KeyID: "k-tool", MCP: []string{"docs/slow"}},
	}))
	t.Cleanup(gw.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var mu sync.Mutex
	var progress []float64
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			if req.Params.ProgressToken == "mine" {
				progress = append(progress, req.Params.Progress)
			}
			mu.Unlock()
		},
	}).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gw.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{"all"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	waitTools(t, cs, 2)

	// The aggregate: names and URIs prefixed "docs-".
	rl, err := cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 1 || rl.Resources[0].URI != "docs-doc://readme" {
		t.Fatalf("resources/list %+v %v", rl, err)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "docs-doc://readme"})
	if err != nil || rr.Contents[0].Text != "read me" || rr.Contents[0].URI != "docs-doc://readme" {
		t.Fatalf("resources/read %+v %v", rr, err)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != "docs-doc://page/{n}" {
		t.Fatalf("resources/templates/list %+v %v", tl, err)
	}
	rr, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "docs-doc://page/7"})
	if err != nil || rr.Contents[0].Text != "page 7" {
		t.Fatalf("templated read %+v %v", rr, err)
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "nosuch-doc://readme"}); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("unknown server's resource: %v", err)
	}
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "docs-review" {
		t.Fatalf("prompts/list %+v %v", pl, err)
	}
	gp, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "docs-review", Arguments: map[string]string{"lang": "go"}})
	if err != nil || gp.Messages[0].Content.(*sdk.TextContent).Text != "review go" {
		t.Fatalf("prompts/get %+v %v", gp, err)
	}
	cr, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "docs-review"}, Argument: sdk.CompleteParamsArgument{Name: "lang", Value: "g"}})
	if err != nil || cr.Completion.Values[0] != "ref/prompt:review:gx" {
		t.Fatalf("completion/complete prompt %+v %v", cr, err)
	}
	cr, err = cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: "docs-doc://page/{n}"}, Argument: sdk.CompleteParamsArgument{Name: "n", Value: "1"}})
	if err != nil || cr.Completion.Values[0] != "ref/resource:doc://page/{n}:1x" {
		t.Fatalf("completion/complete resource %+v %v", cr, err)
	}

	// Progress comes back under the client's own token.
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "docs-slow", Meta: sdk.Meta{"progressToken": "mine"}})
	if err != nil || res.IsError {
		t.Fatalf("slow %+v %v", res, err)
	}
	for range 100 {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	if len(progress) != 2 || progress[0] != 1 || progress[1] != 2 {
		t.Fatalf("progress %v", progress)
	}
	mu.Unlock()

	// Cancelling the client's request cancels the upstream's.
	hctx, hcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(hctx, &sdk.CallToolParams{Name: "docs-hang"})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	hcancel()
	<-done
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream's hang tool was never cancelled")
	}

	// /mcp/docs: the server's own names.
	one := connect(t, gw.URL+"/mcp/docs", "all")
	rr, err = one.ReadResource(ctx, &sdk.ReadResourceParams{URI: "doc://readme"})
	if err != nil || rr.Contents[0].URI != "doc://readme" {
		t.Fatalf("/mcp/docs resources/read %+v %v", rr, err)
	}
	pl, err = one.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "review" {
		t.Fatalf("/mcp/docs prompts/list %+v %v", pl, err)
	}

	// A key allowed one tool sees no resources or prompts of the server.
	tool := connect(t, gw.URL+"/mcp", "toolonly")
	rl, err = tool.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 0 {
		t.Fatalf("tool-only key's resources %+v %v", rl, err)
	}
	if _, err := tool.ReadResource(ctx, &sdk.ReadResourceParams{URI: "docs-doc://readme"}); err == nil || !strings.Contains(err.Error(), "may not") {
		t.Fatalf("tool-only key read a resource: %v", err)
	}
}

func TestIntersectAllowLists(t *testing.T) {
	for _, c := range []struct {
		a, b, want []string
	}{
		{nil, nil, nil},
		{[]string{"fs"}, nil, []string{"fs"}},
		{nil, []string{"fs/read"}, []string{"fs/read"}},
		{[]string{"fs", "every"}, []string{"fs/read", "fs/list"}, []string{"fs/read", "fs/list"}},
		{[]string{"fs/read", "every/echo"}, []string{"fs"}, []string{"fs/read"}},
		{[]string{"fs/write"}, []string{"fs/read"}, []string{}},
	} {
		got := intersect(c.a, c.b)
		if (got == nil) != (c.want == nil) || strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("intersect(%v, %v) = %#v, want %#v", c.a, c.b, got, c.want)
		}
	}
}

// TestGatewayForwardsResourceAndPromptListChanged: a server that adds a
// resource or a prompt tells the gateway, and the gateway tells its
// clients, whose next list shows the new entry.
func TestGatewayForwardsResourceAndPromptListChanged(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "docs"}, nil)
	s.AddResource(&sdk.Resource{URI: "doc://a", Name: "a"}, func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "a"}}}, nil
	})
	s.AddPrompt(&sdk.Prompt{Name: "old"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{}, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "t"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{}, nil, nil
	})
	up := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(up.Close)
	g := New(Options{Servers: []*modellist.MCPServer{{Name: "docs", Transport: modellist.MCPTransportHTTP, URL: up.URL}}})
	g.Start()
	t.Cleanup(g.Close)
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"all": {KeyID: "k-all"}}))
	t.Cleanup(gw.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resources, prompts := make(chan struct{}, 8), make(chan struct{}, 8)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, &sdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { resources <- struct{}{} },
		PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { prompts <- struct{}{} },
	}).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gw.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{"all"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	waitTools(t, cs, 1)
	s.AddResource(&sdk.Resource{URI: "doc://b", Name: "b"}, func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "b"}}}, nil
	})
	select {
	case <-resources:
	case <-ctx.Done():
		t.Fatal("no resources/list_changed reached the client")
	}
	rl, err := cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 2 {
		t.Fatalf("resources after the change: %+v %v", rl, err)
	}
	for _, r := range rl.Resources {
		if strings.Contains(r.URI, listChangedPlaceholder) {
			t.Errorf("the placeholder shows in resources/list: %+v", r)
		}
	}
	s.AddPrompt(&sdk.Prompt{Name: "new"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{}, nil
	})
	select {
	case <-prompts:
	case <-ctx.Done():
		t.Fatal("no prompts/list_changed reached the client")
	}
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 2 || pl.Prompts[0].Name+" "+pl.Prompts[1].Name != "docs-new docs-old" && pl.Prompts[0].Name+" "+pl.Prompts[1].Name != "docs-old docs-new" {
		t.Fatalf("prompts after the change: %+v %v", pl, err)
	}
}
