package policy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// TestAlertNamesRuntimeKeys: an alert on a runtime key, a per-person key
// and a runtime workspace names them as people know them, the id after.
func TestAlertNamesRuntimeKeys(t *testing.T) {
	s, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	c := NewControls(nil)
	c.SetStore(s.(ledger.ControlStore))
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if err := c.PutWorkspace(ctx, ledger.ControlWorkspace{ID: "wrkspc_team1", Name: "research", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []ledger.ControlKey{
		{ID: "apikey_64nk", Name: "bob-laptop", SecretHash: strings.Repeat("a", 64), WorkspaceID: "wrkspc_team1", Status: "active", CreatedAt: now},
		{ID: "apikey_p3r5", Name: "oidc: bob@example.com", SecretHash: strings.Repeat("b", 64), Status: "active", CreatedAt: now},
	} {
		if err := c.PutKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}

	posted := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		_ = json.NewDecoder(r.Body).Decode(&m)
		posted <- m.Text
	}))
	defer srv.Close()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := NewAlerter(srv.URL, func() ledger.AlertClaimer { return nil }, func(err error) {
		// The last post may still await its answer when the test ends.
		if runCtx.Err() == nil {
			t.Error(err)
		}
	})
	a.Names = c.RuntimeName
	go a.Run(runCtx)

	for _, tc := range []struct {
		al   BudgetAlert
		want string
	}{
		{BudgetAlert{Kind: "100", Scope: ledger.ScopeKey, ScopeID: "apikey_64nk", Label: "api key apikey_64nk", Period: "monthly"},
			"Budget reached — api key bob-laptop (apikey_64nk): "},
		{BudgetAlert{Kind: "80", Scope: ledger.ScopeKey, ScopeID: "apikey_p3r5", Label: "api key apikey_p3r5", Period: "daily"},
			"80% of budget — api key oidc: bob@example.com (apikey_p3r5): "},
		{BudgetAlert{Kind: "soft", Scope: ledger.ScopeWorkspace, ScopeID: "wrkspc_team1", Label: "workspace wrkspc_team1", Period: "monthly"},
			"Soft budget reached — workspace research (wrkspc_team1): "},
		{BudgetAlert{Kind: "session", Scope: ledger.ScopeSession, ScopeID: "s1", Label: "session s1 of key apikey_64nk"},
			"session s1 of key bob-laptop (apikey_64nk): "},
		{BudgetAlert{Kind: "100", Scope: ledger.ScopeKey, ScopeID: "apikey_gone", Label: "api key apikey_gone", Period: "monthly"},
			"api key apikey_gone: "},
	} {
		a.Notify(tc.al)
		select {
		case got := <-posted:
			if !strings.Contains(got, tc.want) {
				t.Errorf("posted %q, want it to contain %q", got, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no alert posted for %q", tc.al.Label)
		}
	}
}
