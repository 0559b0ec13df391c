package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// TestToolSearch: a key with the small tool list sees two tools; the
// search finds an upstream tool by a word of its name, the call tool and
// the tool's own name both run it (recorded as that tool), and the
// allow-list still holds through the call tool. A key without it sees
// every tool.
func TestToolSearch(t *testing.T) {
	up := upstreamServer(t, "tok")
	obs := &recObs{}
	g := New(Options{Observer: obs, Servers: []*modellist.MCPServer{{Name: "internal", Transport: modellist.MCPTransportHTTP, URL: up.URL,
		Headers: map[string]string{"Authorization": "Bearer tok"}}},
		ToolSearch: func(id *policy.Identity) bool { return id.Limits.MCPToolSearch }})
	g.Start()
	t.Cleanup(g.Close)
	small := &policy.Identity{KeyID: "k-small", MCP: []string{"internal/echo"}}
	small.Limits.MCPToolSearch = true
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"small": small, "all": {KeyID: "k-all"}}))
	t.Cleanup(gw.Close)

	all := connect(t, gw.URL+"/mcp", "all")
	if names := waitTools(t, all, 2); strings.Join(names, ",") != "internal-echo,internal-secret" {
		t.Fatalf("full list %v", names)
	}
	cs := connect(t, gw.URL+"/mcp", "small")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != 2 || res.Tools[0].Name != searchToolName || res.Tools[1].Name != callToolName {
		t.Fatalf("small list %+v %v", res, err)
	}
	ctx := context.Background()
	found, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": "ECHO something"}})
	if err != nil {
		t.Fatal(err)
	}
	var tools []foundTool
	if err := json.Unmarshal([]byte(found.Content[0].(*sdk.TextContent).Text), &tools); err != nil || len(tools) != 1 || tools[0].Name != "internal-echo" || tools[0].InputSchema == nil {
		t.Fatalf("search: %+v %v", tools, err)
	}
	for _, p := range []*sdk.CallToolParams{
		{Name: callToolName, Arguments: map[string]any{"name": "internal-echo", "arguments": map[string]any{"text": "via call"}}},
		{Name: "internal-echo", Arguments: map[string]any{"text": "by name"}},
	} {
		got, err := cs.CallTool(ctx, p)
		if err != nil || got.IsError || !strings.HasPrefix(got.Content[0].(*sdk.TextContent).Text, "echo:") {
			t.Fatalf("%s: %+v %v", p.Name, got, err)
		}
	}
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "internal-secret", "arguments": map[string]any{}}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, `tool "secret" of MCP server "internal" is not allowed for this key`) {
		t.Fatalf("call tool outside the allow-list: %v", err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.calls) != 3 || obs.calls[0].Tool != "echo" || obs.calls[1].Tool != "echo" || obs.calls[0].KeyID != "k-small" ||
		obs.calls[2].Tool != "secret" || obs.calls[2].Outcome != OutcomeDenied {
		t.Fatalf("recorded %+v", obs.calls)
	}
}
