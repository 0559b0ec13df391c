package integration

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPOpenSessionRecheckedPerCall: an MCP session stays bound to its
// key, but each tools/call is admitted with the key as the control
// snapshot has it now: a key deactivated, a key expired, or a key whose
// workspace is archived on instance a gets its next call on an open
// session on instance b refused by the key check (401/403).
func TestMCPOpenSessionRecheckedPerCall(t *testing.T) {
	a, b := mcpTwoInstances(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	status, _, out := a.do(t, "POST", "/v1/organizations/workspaces", adminKey, `{"name":"doomed"}`)
	var ws struct {
		ID string `json:"id"`
	}
	if status != 200 || json.Unmarshal(out, &ws) != nil {
		t.Fatalf("create workspace: %d %s", status, out)
	}
	revoked := createKey(t, a, `{"name":"revoked"}`)
	expiring := createKey(t, a, `{"name":"expiring","expires_at":"`+time.Now().Add(8*time.Second).UTC().Format(time.RFC3339)+`"}`)
	archived := createKey(t, a, `{"name":"archived","workspace_id":"`+ws.ID+`"}`)

	sessions := map[string]*sdk.ClientSession{}
	for name, k := range map[string]createdKey{"revoked": revoked, "expiring": expiring, "archived": archived} {
		sessions[name] = mcpSessionWith(ctx, t, b, k.Value, "internal-gateway_probe", "internal-other")
		if got := mcpCallText(ctx, t, sessions[name], "internal-gateway_probe", map[string]any{"word": name}); !strings.Contains(got, name) {
			t.Fatalf("%s before: %q", name, got)
		}
	}
	if status, _, out := a.do(t, "POST", "/v1/organizations/api_keys/"+revoked.ID, adminKey, `{"status":"inactive"}`); status != 200 {
		t.Fatalf("deactivate: %d %s", status, out)
	}
	if status, _, out := a.do(t, "POST", "/v1/organizations/workspaces/"+ws.ID+"/archive", adminKey, ""); status != 200 {
		t.Fatalf("archive: %d %s", status, out)
	}
	for name, cs := range sessions {
		refusedCall(ctx, t, cs, name)
	}
}

// refusedCall polls (the other instance reads the key table on a timer)
// until the open session's next call is refused, and checks the refusal
// came from the gateway's key check.
func refusedCall(ctx context.Context, t *testing.T, cs *sdk.ClientSession, name string) {
	t.Helper()
	for ctx.Err() == nil {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "internal-gateway_probe", Arguments: map[string]any{"word": name}})
		if err != nil {
			if !strings.Contains(err.Error(), "Unauthorized") && !strings.Contains(err.Error(), "Forbidden") {
				t.Fatalf("%s: refused, but not by the key check: %v", name, err)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: the open session's calls were never refused", name)
}

// TestMCPMadeUpToolNamesOneRollupRow: 100 calls for random tool names, on
// a configured server and on none, add at most one usage_rollup row each
// (tool "(unknown)"), not a row per name; the names are in no row.
func TestMCPMadeUpToolNamesOneRollupRow(t *testing.T) {
	probe := probeServer(t)
	g := startGateway(t, gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: echo
    proxy_params:
      model: echo/echo
mcp_servers:
  internal:
    url: %s
    transport: http
`, probe.URL)})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := mcpConnect(ctx, t, g.base+"/mcp", aliceKey)
	mcpWaitTools(ctx, t, cs, "internal-gateway_probe")
	for i := range 100 {
		name := fmt.Sprintf("internal-madeup%d-%x", i, rand.Uint64())
		if i%2 == 1 {
			name = fmt.Sprintf("madeup%d-%x", i, rand.Uint64())
		}
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name}); err == nil {
			t.Fatalf("%s answered", name)
		}
	}
	cs.Close()
	if recs := g.ledgerRecords(t); len(recs) < 100 {
		t.Fatalf("%d records", len(recs))
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(g.dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT alias, upstream_model FROM usage_rollup WHERE alias <> 'echo'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var alias, model string
		if err := rows.Scan(&alias, &model); err != nil {
			t.Fatal(err)
		}
		got = append(got, alias+" "+model)
	}
	// One row per form and time bucket: a configured server's unknown
	// tool, and no server at all.
	slices.Sort(got)
	got = slices.Compact(got)
	if want := []string{"(unknown)/(unknown) (unknown)", "internal/(unknown) (unknown)"}; !slices.Equal(got, want) {
		t.Fatalf("usage_rollup rows %q, want %q", got, want)
	}
}
