package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
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
			CreatedAt: t0, UpdatedAt: t0, Limits: Limits{Models: []string{"coder"}, BudgetCents: Cents(5000), BudgetPeriod: "monthly", RPM: 60}}
		if err := cs.PutKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		w := ControlWorkspace{ID: "wrkspc_1", Name: "backend", CreatedAt: t0, UpdatedAt: t0, Limits: Limits{BudgetCents: Cents(100), BudgetPeriod: "daily"}}
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
			*c.Keys[0].Limits.BudgetCents != 5000 || c.Keys[0].Limits.Models[0] != "coder" || c.Keys[0].Hint != "mg-AB...YZ" {
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

// TestControlUpdateKeepsConcurrentChanges: an archive and a rate edit of
// one key, racing, both land: the row is held from read to write, so
// neither writes back a stale copy of the other's field (a revoke undone).
func TestControlUpdateKeepsConcurrentChanges(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		cs := s.(ControlStore)
		ctx := context.Background()
		for trial := 0; trial < 20; trial++ {
			id := "apikey_race" + string(rune('a'+trial))
			if err := cs.PutKey(ctx, ControlKey{ID: id, SecretHash: id, Status: "active", CreatedAt: t0, UpdatedAt: t0}); err != nil {
				t.Fatal(err)
			}
			errs := make(chan error, 2)
			go func() {
				_, err := cs.UpdateKey(ctx, id, func(k *ControlKey) error { k.Status = "archived"; return nil })
				errs <- err
			}()
			go func() {
				_, err := cs.UpdateKey(ctx, id, func(k *ControlKey) error { k.Limits.RPM = 5; return nil })
				errs <- err
			}()
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			c, err := cs.LoadControls(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range c.Keys {
				if k.ID == id && (k.Status != "archived" || k.Limits.RPM != 5) {
					t.Fatalf("trial %d: status %q rpm %d, want archived and 5", trial, k.Status, k.Limits.RPM)
				}
			}
		}
		refused := errors.New("refused")
		if _, err := cs.UpdateKey(ctx, "apikey_racea", func(k *ControlKey) error { k.Status = "active"; return refused }); err != refused {
			t.Errorf("change error: %v", err)
		}
		if _, err := cs.UpdateKey(ctx, "apikey_none", func(*ControlKey) error { return nil }); !errors.Is(err, ErrControlNotFound) {
			t.Errorf("unknown key: %v", err)
		}
		w := ControlWorkspace{ID: "wrkspc_race", Name: "w", CreatedAt: t0, UpdatedAt: t0}
		if err := cs.PutWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
		got, err := cs.UpdateWorkspace(ctx, w.ID, func(w *ControlWorkspace) error { w.ArchivedAt = t0; return nil })
		if err != nil || !got.ArchivedAt.Equal(t0) || got.Name != "w" {
			t.Errorf("workspace update %+v %v", got, err)
		}
		if _, err := cs.UpdateWorkspace(ctx, "wrkspc_none", func(*ControlWorkspace) error { return nil }); !errors.Is(err, ErrControlNotFound) {
			t.Errorf("unknown workspace: %v", err)
		}
	})
}

// TestLimitsZeroBudgetIsKept: a budget of 0 survives the settings JSON,
// and a row written before budgets could be 0 (no budget_cents) reads as
// no budget.
func TestLimitsZeroBudgetIsKept(t *testing.T) {
	b, _ := json.Marshal(Limits{BudgetCents: Cents(0), BudgetPeriod: "total", SessionBudgetCents: Cents(0)})
	var l Limits
	if err := json.Unmarshal(b, &l); err != nil || l.BudgetCents == nil || *l.BudgetCents != 0 || l.SessionBudgetCents == nil {
		t.Errorf("%s -> %+v %v", b, l, err)
	}
	var old Limits
	if err := json.Unmarshal([]byte(`{"budget_period":"monthly","rpm":5}`), &old); err != nil || old.BudgetCents != nil || old.SessionBudgetCents != nil {
		t.Errorf("legacy row: %+v %v", old, err)
	}
}

// TestControlKeyCreatedBy: who made a key (a person, for keys minted at
// sign-in) is kept beside its limits and survives an update, in both
// stores; a key stored before the field existed reads as the admin API's.
func TestControlKeyCreatedBy(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		cs := s.(ControlStore)
		ctx := context.Background()
		by := &KeyCreator{Type: "oidc", ID: "bob@example.com", Email: "bob@example.com", Subject: "bob"}
		k := ControlKey{ID: "apikey_p", Name: "oidc: bob@example.com", SecretHash: "cd34", Status: "active", CreatedAt: t0, UpdatedAt: t0,
			ExpiresAt: t0.Add(12 * time.Hour), Limits: Limits{Models: []string{"echo"}, RPM: 5}, CreatedBy: by}
		if err := cs.PutKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		if err := cs.PutKey(ctx, ControlKey{ID: "apikey_a", SecretHash: "ef56", Status: "active", CreatedAt: t0, UpdatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.UpdateKey(ctx, "apikey_p", func(k *ControlKey) error { k.Status = "inactive"; return nil }); err != nil {
			t.Fatal(err)
		}
		c, err := cs.LoadControls(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range c.Keys {
			switch got.ID {
			case "apikey_p":
				if got.CreatedBy == nil || *got.CreatedBy != *by || got.Limits.RPM != 5 || got.Status != "inactive" {
					t.Errorf("minted key read back as %+v (created by %+v)", got, got.CreatedBy)
				}
			case "apikey_a":
				if got.CreatedBy != nil {
					t.Errorf("an admin API key reads as created by %+v", got.CreatedBy)
				}
			}
		}
	})
}

// TestReadControls: the rows of the ids asked for, as a full load reads
// them, at the version of the same snapshot; ids not stored are left out.
func TestReadControls(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		cs := s.(ControlStore)
		ctx := context.Background()
		for i, id := range []string{"apikey_b", "apikey_a", "apikey_c"} {
			k := ControlKey{ID: id, Name: id, WorkspaceID: "wrkspc_1", SecretHash: "hash-" + id, Status: "active",
				CreatedAt: t0.Add(time.Duration(i) * time.Second), UpdatedAt: t0, Limits: Limits{RPM: int64(i + 1), Models: []string{"coder"}}}
			if err := cs.PutKey(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		if err := cs.PutWorkspace(ctx, ControlWorkspace{ID: "wrkspc_1", Name: "one", CreatedAt: t0, UpdatedAt: t0, Limits: Limits{BudgetCents: Cents(7)}}); err != nil {
			t.Fatal(err)
		}
		all, err := cs.LoadControls(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cs.ReadControls(ctx, []string{"apikey_c", "apikey_missing", "apikey_b"}, []string{"wrkspc_1"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != all.Version {
			t.Errorf("version %d, LoadControls %d", got.Version, all.Version)
		}
		// all.Keys in creation order: b, a, c.
		if want := []ControlKey{all.Keys[0], all.Keys[2]}; !reflect.DeepEqual(got.Keys, want) {
			t.Errorf("keys\n got %+v\nwant %+v", got.Keys, want)
		}
		if !reflect.DeepEqual(got.Workspaces, all.Workspaces) {
			t.Errorf("workspaces\n got %+v\nwant %+v", got.Workspaces, all.Workspaces)
		}
		none, err := cs.ReadControls(ctx, nil, nil)
		if err != nil || len(none.Keys) != 0 || len(none.Workspaces) != 0 || none.Version != all.Version {
			t.Errorf("nothing asked: %+v, %v", none, err)
		}
	})
}

// TestSignOutKeepsOnlyLiveSessions: a sign-out moves the control
// version and is read back with the controls, a partial read included;
// a session past its expiry is neither read nor kept (the next sign-out
// deletes its row).
func TestSignOutKeepsOnlyLiveSessions(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		cs := s.(ControlStore)
		ctx := context.Background()
		v0, err := cs.ControlVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.SignOut(ctx, "old-session", time.Now().Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		if v, _ := cs.ControlVersion(ctx); v != v0+1 {
			t.Fatalf("control version %d after a sign-out, want %d", v, v0+1)
		}
		for _, id := range []string{"live-session", "live-session"} {
			if err := cs.SignOut(ctx, id, time.Now().Add(time.Hour)); err != nil {
				t.Fatalf("sign-out of %s (twice is fine): %v", id, err)
			}
		}
		want := []string{SessionDigest("live-session")}
		if c, err := cs.LoadControls(ctx); err != nil || !slices.Equal(c.SignedOut, want) {
			t.Fatalf("full read: %v %v, want %v", c.SignedOut, err, want)
		}
		if c, err := cs.ReadControls(ctx, nil, nil); err != nil || !slices.Equal(c.SignedOut, want) {
			t.Fatalf("partial read: %v %v, want %v", c.SignedOut, err, want)
		}
		var rows int
		if err := s.(*sqlStore).db.QueryRow(`SELECT COUNT(*) FROM signed_out_sessions`).Scan(&rows); err != nil || rows != 1 {
			t.Fatalf("%d rows kept (%v), want 1: the expired one is purged", rows, err)
		}
	})
}
