package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A small tool list (mcp_tool_search on a key or workspace): tools/list
// offers two tools of the gateway's instead of every tool of every
// server, so an agent with many servers keeps its context: one finds
// tools by a query and returns their names, descriptions and input
// schemas, the other calls one by name. Every tool stays callable by its
// own name too (tools/call is checked against the allow-list, not the
// list shown), and a call through either path is the same call: allow-
// list, rate limit, approval, ledger.

// The gateway's two tools in a small tool list.
const (
	searchToolName = "mcp_tool_search"
	callToolName   = "mcp_tool_call"
)

// Search results: how many by default and at most.
const (
	defaultSearchResults = 8
	maxSearchResults     = 50
)

var (
	searchSchema = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Words to look for in tool names and descriptions, e.g. \"create github issue\""},"limit":{"type":"integer","minimum":1,"maximum":50,"description":"How many tools to return (default 8)"}},"required":["query"]}`)
	callSchema   = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"The tool's name as mcp_tool_search returned it"},"arguments":{"type":"object","description":"The tool's arguments, as its input schema says"}},"required":["name"]}`)
)

// searchTools are the tools a small list shows.
func searchTools() []*sdk.Tool {
	return []*sdk.Tool{
		{Name: searchToolName, Description: "Find the tools this gateway offers (many MCP servers are behind it). Returns each match's name, description and input schema; then call one with mcp_tool_call.", InputSchema: searchSchema},
		{Name: callToolName, Description: "Call a tool found with mcp_tool_search, by its name, with its arguments.", InputSchema: callSchema},
	}
}

// addSearchTools registers the two tools on a small list's view.
func (g *Gateway) addSearchTools(v *view) {
	t := searchTools()
	v.s.AddTool(t[0], func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct {
			Query string `json:"query"`
			Limit int    `json:"limit"`
		}
		if req.Params != nil && len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, rpcError(jsonrpc.CodeInvalidParams, "tool %q: arguments must be {\"query\": \"words\", \"limit\": n}: %v", searchToolName, err)
			}
		}
		found := g.search(v, in.Query, in.Limit)
		b, _ := json.Marshal(found)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
	})
	v.s.AddTool(t[1], func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if req.Params == nil || json.Unmarshal(req.Params.Arguments, &in) != nil || in.Name == "" {
			return nil, rpcError(jsonrpc.CodeInvalidParams, "tool %q: arguments must be {\"name\": \"<tool>\", \"arguments\": {…}}", callToolName)
		}
		inner := *req
		inner.Params = &sdk.CallToolParamsRaw{Meta: req.Params.Meta, Name: in.Name, Arguments: in.Arguments}
		u, tool, ok := g.resolve(v, in.Name)
		if !ok || in.Name == searchToolName || in.Name == callToolName {
			// Refused and recorded as a tools/call of that name would be.
			err := g.checkListed(ctx, v, &inner)
			if err == nil {
				err = rpcError(jsonrpc.CodeInvalidParams, "tool %q calls the tools mcp_tool_search finds, not itself or the search", callToolName)
			}
			return nil, err
		}
		return g.callHandler(u, tool)(ctx, &inner)
	})
}

// resolve is the upstream and its tool behind name in v's list.
func (g *Gateway) resolve(v *view, name string) (*upstream, string, bool) {
	g.mu.Lock()
	t, ok := v.have[name]
	g.mu.Unlock()
	if !ok {
		return nil, "", false
	}
	server := v.single
	if server == "" {
		server, _, _ = strings.Cut(name, "-")
	}
	u := g.byName[server]
	return u, t.Name, u != nil
}

// foundTool is one search result.
type foundTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"inputSchema,omitempty"`
}

// search ranks v's tools by the query's words: a word in the name counts
// three times one in the description. An empty query lists the first
// tools by name.
func (g *Gateway) search(v *view, query string, limit int) []foundTool {
	if limit <= 0 {
		limit = defaultSearchResults
	}
	limit = min(limit, maxSearchResults)
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	})
	type scored struct {
		t     foundTool
		score int
	}
	var all []scored
	g.mu.Lock()
	for name, t := range v.have {
		lname, ldesc := strings.ToLower(name), strings.ToLower(t.Description)
		score := 0
		for _, w := range words {
			if strings.Contains(lname, w) {
				score += 3
			}
			if strings.Contains(ldesc, w) {
				score++
			}
		}
		if score > 0 || len(words) == 0 {
			all = append(all, scored{foundTool{Name: name, Description: t.Description, InputSchema: t.InputSchema}, score})
		}
	}
	g.mu.Unlock()
	slices.SortFunc(all, func(a, b scored) int { return cmp.Or(b.score-a.score, strings.Compare(a.t.Name, b.t.Name)) })
	out := make([]foundTool, 0, min(limit, len(all)))
	for i := 0; i < len(all) && i < limit; i++ {
		out = append(out, all[i].t)
	}
	return out
}
