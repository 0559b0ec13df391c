package mcp

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// A priced MCP tool call (cost_per_call) counts against the caller's
// person's and organization's spend limits, not only the key's: each
// call is admitted against every limit that applies before its server is
// called, as a model request is, and its record carries the person and
// groups, so the ledger counts it in their spend too. Two callers, one a
// person's key under a 5-cent per-member budget, one a key of no one
// under the organization's 9-cent limit; calls cost 2 cents.
func TestPricedToolCallCountsAgainstPersonAndOrganization(t *testing.T) {
	st, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	org := int64(9)
	if _, err := st.(ledger.SpendLimitStore).PutSpendLimit(context.Background(), ledger.SpendLimit{Scope: ledger.ScopeOrganization,
		ScopeID: ledger.OrganizationID, Period: "monthly", AmountCents: &org}); err != nil {
		t.Fatal(err)
	}
	budgets := policy.NewBudgets(func() ledger.SpendStore { return st.(ledger.SpendStore) }, nil)
	if err := budgets.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	up := upstreamServer(t, "upstream-token")
	obs := &recObs{}
	g := New(Options{Observer: obs, Servers: []*modellist.MCPServer{{Name: "internal", Transport: modellist.MCPTransportHTTP, URL: up.URL,
		Headers: map[string]string{"Authorization": "Bearer upstream-token"}, CostPerCallPico: 2e10}},
		Reserve: func(ctx context.Context, id *policy.Identity, session string, pico int64) (*policy.Reservation, error) {
			hold, refusal := budgets.Admit(ctx, id, ledger.Limits{}, session, pico, time.Minute)
			if refusal != nil {
				return nil, refusal
			}
			return hold, nil
		}})
	g.Start()
	t.Cleanup(g.Close)
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{
		"bob":    {KeyID: "k-bob", Owner: "bob@example.com", Groups: "eng", PersonBudget: &ledger.PersonBudget{Cents: 5, Period: "total"}},
		"script": {KeyID: "k-script"},
	}))
	t.Cleanup(gw.Close)
	calls := func(key string) (ok int, refused string) {
		cs := connect(t, gw.URL+"/mcp", key)
		waitTools(t, cs, 2)
		for range 10 {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "internal-echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil {
				return ok, err.Error()
			}
			if res.IsError {
				t.Fatalf("a tool error: %+v", res.Content)
			}
			ok++
		}
		return ok, ""
	}
	// bob: 2 + 2 cents; a third would pass his 5.
	if n, refused := calls("bob"); n != 2 || !strings.Contains(refused, "person bob@example.com") {
		t.Errorf("bob made %d calls, then %q; want 2, then a refusal naming his limit", n, refused)
	}
	// The organization has 9 - 4 = 5 cents left: two more calls.
	if n, refused := calls("script"); n != 2 || !strings.Contains(refused, "organization") {
		t.Errorf("the script made %d calls, then %q; want 2, then a refusal naming the organization's limit", n, refused)
	}
	var bobs int
	obs.mu.Lock()
	defer obs.mu.Unlock()
	for _, c := range obs.calls {
		if c.KeyID == "k-bob" && c.Outcome == OutcomeOK {
			bobs++
			if c.Person != "bob@example.com" || c.Groups != "eng" || c.Spend.Pico != 2e10 || c.Spend.Ticket == 0 {
				t.Errorf("bob's call recorded as %+v; want his person, group, its 2 cents and its reservation", c)
			}
		}
	}
	if bobs != 2 {
		t.Errorf("%d of bob's calls recorded", bobs)
	}
}
