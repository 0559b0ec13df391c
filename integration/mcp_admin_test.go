package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpTryConnect opens a session, or returns the error (an unknown key).
func mcpTryConnect(ctx context.Context, endpoint, key string) (*sdk.ClientSession, error) {
	return sdk.NewClient(&sdk.Implementation{Name: "go-sdk-test"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: mcpBearer{key}}}, nil)
}

// mcpToolNames lists a session's tools, sorted.
func mcpToolNames(ctx context.Context, t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// mcpSessionWith waits (the other instance polls the key table) until a
// new session of key lists exactly want, and returns it.
func mcpSessionWith(ctx context.Context, t *testing.T, g *gateway, key string, want ...string) *sdk.ClientSession {
	t.Helper()
	var last []string
	for ctx.Err() == nil {
		cs, err := mcpTryConnect(ctx, g.base+"/mcp", key)
		if err == nil {
			last = mcpToolNames(ctx, t, cs)
			if slices.Equal(last, want) {
				t.Cleanup(func() { cs.Close() })
				return cs
			}
			cs.Close()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("key never listed %v; last %v", want, last)
	return nil
}

// mcpTwoInstances starts two gateways on one fresh PostgreSQL schema with
// the probe server as MCP server "internal".
func mcpTwoInstances(t *testing.T) (a, b *gateway) {
	dsn, _, _ := freshSchema(t)
	probe := probeServer(t)
	cfg := gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: echo
    proxy_params:
      model: echo/echo
mcp_servers:
  internal:
    url: %s
    transport: http
`, probe.URL), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + dsn.String()}}
	return startGateway(t, cfg), startGateway(t, cfg)
}

// TestMCPAdminAllowList: the admin API's "mcp" allow-list on runtime keys
// and workspaces, set on one instance over PostgreSQL, governs tools/list
// and tools/call on the other, and a change refuses the next call of an
// open session.
func TestMCPAdminAllowList(t *testing.T) {
	a, b := mcpTwoInstances(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	for _, bad := range []string{`[]`, `["bad entry"]`, `"internal"`} {
		if status, _, out := a.do(t, "POST", "/v1/organizations/api_keys", adminKey, `{"name":"x","mcp":`+bad+`}`); status != 400 || !strings.Contains(string(out), "mcp") {
			t.Errorf("mcp %s: %d %s", bad, status, out)
		}
	}

	status, _, out := a.do(t, "POST", "/v1/organizations/workspaces", adminKey, `{"name":"tools","mcp":["internal"]}`)
	var ws struct {
		ID  string   `json:"id"`
		MCP []string `json:"mcp"`
	}
	if status != 200 || json.Unmarshal(out, &ws) != nil || !slices.Equal(ws.MCP, []string{"internal"}) {
		t.Fatalf("create workspace: %d %s", status, out)
	}
	k := createKey(t, a, `{"name":"probe-only","workspace_id":"`+ws.ID+`","mcp":["internal/gateway_probe"]}`)
	status, _, out = b.do(t, "GET", "/v1/organizations/api_keys/"+k.ID, adminKey, "")
	if status != 200 || !strings.Contains(string(out), `"mcp":["internal/gateway_probe"]`) {
		t.Fatalf("GET key: %d %s", status, out)
	}

	// Instance b: only the allowed tool is listed; the other is refused.
	cs := mcpSessionWith(ctx, t, b, k.Value, "internal-gateway_probe")
	if got := mcpCallText(ctx, t, cs, "internal-gateway_probe", map[string]any{"word": "fig"}); got != "probe-answer-fig-7731" {
		t.Fatalf("probe: %q", got)
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "internal-other"}); err == nil || !strings.Contains(err.Error(), "internal-other") {
		t.Fatalf("a tool outside the list: %v", err)
	}

	// Changed on a: b's open session is refused its next probe call, and
	// a new session lists the new tool.
	if status, _, out := a.do(t, "POST", "/v1/organizations/api_keys/"+k.ID, adminKey, `{"mcp":["internal/other"]}`); status != 200 {
		t.Fatalf("update key: %d %s", status, out)
	}
	mcpSessionWith(ctx, t, b, k.Value, "internal-other")
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "internal-gateway_probe", Arguments: map[string]any{"word": "fig"}}); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("the open session's call after the change: %v", err)
	}

	// The workspace's list narrows a key allowed everything.
	if status, _, out := a.do(t, "POST", "/v1/organizations/api_keys/"+k.ID, adminKey, `{"mcp":null}`); status != 200 || strings.Contains(string(out), `"mcp"`) {
		t.Fatalf("clear key list: %d %s", status, out)
	}
	if status, _, out := a.do(t, "POST", "/v1/organizations/workspaces/"+ws.ID, adminKey, `{"mcp":["internal/gateway_probe"]}`); status != 200 {
		t.Fatalf("update workspace: %d %s", status, out)
	}
	mcpSessionWith(ctx, t, b, k.Value, "internal-gateway_probe")
	if status, _, out := a.do(t, "POST", "/v1/organizations/workspaces/"+ws.ID, adminKey, `{"mcp":null}`); status != 200 {
		t.Fatalf("clear workspace list: %d %s", status, out)
	}
	mcpSessionWith(ctx, t, b, k.Value, "internal-gateway_probe", "internal-other")
}
