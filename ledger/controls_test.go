package ledger

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestControlStore: runtime keys and workspaces round-trip on both
// databases, and every change moves the version instances poll.
func TestControlStore(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		cs := s.(ControlStore)
		ctx := context.Background()
		v0, err := cs.ControlVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		k := ControlKey{ID: "apikey_1", Name: "ci", WorkspaceID: "frontend", SecretHash: "ab12", Hint: "mg-AB...YZ", Status: "active",
			CreatedAt: t0, UpdatedAt: t0, Limits: Limits{Models: []string{"coder"}, BudgetCents: 5000, BudgetPeriod: "monthly", RPM: 60}}
		if err := cs.PutKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		w := ControlWorkspace{ID: "wrkspc_1", Name: "backend", CreatedAt: t0, UpdatedAt: t0, Limits: Limits{BudgetCents: 100, BudgetPeriod: "daily"}}
		if err := cs.PutWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
		// A second key with the same secret is refused.
		if err := cs.PutKey(ctx, ControlKey{ID: "apikey_2", SecretHash: "ab12", Status: "active", CreatedAt: t0, UpdatedAt: t0}); !errors.Is(err, ErrDuplicateSecret) {
			t.Errorf("duplicate secret: %v", err)
		}
		// An update replaces the row under the same id.
		k.Status, k.UpdatedAt, k.ExpiresAt = "inactive", t0.Add(time.Hour), t0.Add(24*time.Hour)
		if err := cs.PutKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		c, err := cs.LoadControls(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Version != v0+3 {
			t.Errorf("version %d, want %d", c.Version, v0+3)
		}
		if len(c.Keys) != 1 || c.Keys[0].Status != "inactive" || !c.Keys[0].ExpiresAt.Equal(t0.Add(24*time.Hour)) ||
			c.Keys[0].Limits.BudgetCents != 5000 || c.Keys[0].Limits.Models[0] != "coder" || c.Keys[0].Hint != "mg-AB...YZ" {
			t.Errorf("keys %+v", c.Keys)
		}
		if len(c.Workspaces) != 1 || c.Workspaces[0].Name != "backend" || !c.Workspaces[0].ArchivedAt.IsZero() || c.Workspaces[0].Limits.BudgetPeriod != "daily" {
			t.Errorf("workspaces %+v", c.Workspaces)
		}
		if v, _ := cs.ControlVersion(ctx); v != c.Version {
			t.Errorf("ControlVersion %d, LoadControls %d", v, c.Version)
		}
	})
}
