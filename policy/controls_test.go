package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/ledger"
)

// loadCounter counts the full loads and the read-backs a registry makes.
type loadCounter struct {
	ledger.ControlStore
	loads, reads atomic.Int64
}

func (c *loadCounter) LoadControls(ctx context.Context) (ledger.Controls, error) {
	c.loads.Add(1)
	return c.ControlStore.LoadControls(ctx)
}

func (c *loadCounter) ReadControls(ctx context.Context, keyIDs, wsIDs []string) (ledger.Controls, error) {
	c.reads.Add(1)
	return c.ControlStore.ReadControls(ctx, keyIDs, wsIDs)
}

// controlStores open a fresh SQLite ledger and a fresh PostgreSQL schema.
func controlStores() map[string]func(t testing.TB) ledger.ControlStore {
	open := map[string]func(t testing.TB) ledger.ControlStore{
		"sqlite": func(t testing.TB) ledger.ControlStore {
			s, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s.(ledger.ControlStore)
		},
	}
	open["postgres"] = func(t testing.TB) ledger.ControlStore {
		s, err := ledger.OpenPostgres(context.Background(), pgtest.FreshSchema(t)) // skips without a server
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s.(ledger.ControlStore)
	}
	return open
}

func secretHash(secret string) string {
	d := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(d[:])
}

// A registry's own changes read back only the rows they wrote, and the
// snapshot it ends with is exactly what a full load gives: the same keys
// and workspaces in the same order, the same secrets accepted (a key put
// again with a new secret no longer answers to the old one), archived
// workspaces the same.
func TestControlsOwnChangesReadBackOnlyTheirRows(t *testing.T) {
	for name, open := range controlStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := &loadCounter{ControlStore: open(t)}
			c := NewControls(nil)
			c.SetStore(store)
			if err := c.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			for _, id := range []string{"wrkspc_b", "wrkspc_a"} {
				if err := c.PutWorkspace(ctx, ledger.ControlWorkspace{ID: id, Name: id, CreatedAt: t0, UpdatedAt: t0}); err != nil {
					t.Fatal(err)
				}
			}
			// Keys made out of id order, some in one microsecond, so the
			// merge has to order them as the database does.
			for i := range 40 {
				at := t0.Add(time.Duration(i/3) * time.Microsecond)
				k := ledger.ControlKey{ID: fmt.Sprintf("apikey_%02d", 39-i), Name: "k", WorkspaceID: "wrkspc_a", SecretHash: secretHash(fmt.Sprint("secret-", i)),
					Status: "active", CreatedAt: at, UpdatedAt: at, Limits: ledger.Limits{Models: []string{"coder"}, RPM: int64(i)}}
				if err := c.PutKey(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.UpdateKey(ctx, "apikey_05", func(k *ledger.ControlKey) error { k.Status = "inactive"; return nil }); err != nil {
				t.Fatal(err)
			}
			if _, err := c.UpdateWorkspace(ctx, "wrkspc_b", func(w *ledger.ControlWorkspace) error { w.ArchivedAt = t0.Add(time.Hour); return nil }); err != nil {
				t.Fatal(err)
			}
			// apikey_39 was made with secret-0; put again with a new one.
			if err := c.PutKey(ctx, ledger.ControlKey{ID: "apikey_39", Name: "rotated", WorkspaceID: "wrkspc_a", SecretHash: secretHash("rotated"),
				Status: "active", CreatedAt: t0, UpdatedAt: t0.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if n := store.loads.Load(); n != 1 {
				t.Errorf("%d full loads for 45 changes of this instance's own, want the first only", n)
			}
			if n := store.reads.Load(); n != 45 {
				t.Errorf("%d read-backs, want one per change (45)", n)
			}

			full := NewControls(nil)
			full.SetStore(store.ControlStore)
			if err := full.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			sameSnapshot(t, c, full)
			if c.lookup(digestOf("secret-0")) != nil {
				t.Error("the replaced secret of apikey_39 still authenticates")
			}
			if rk := c.lookup(digestOf("rotated")); rk == nil || rk.id.KeyID != "apikey_39" {
				t.Errorf("the new secret of apikey_39: %+v", rk)
			}
			if rk := c.lookup(digestOf("secret-34")); rk == nil || rk.status != "inactive" {
				t.Errorf("apikey_05 after its update: %+v", rk)
			}
			if !c.archivedWorkspace("wrkspc_b") || c.archivedWorkspace("wrkspc_a") {
				t.Error("archived workspaces differ from the stored ones")
			}
		})
	}
}

// A change another instance made in between is not missed: the version
// moved by more than this instance's own change, so it loads everything.
func TestControlsChangeOfAnotherInstanceInBetweenLoadsAll(t *testing.T) {
	for name, open := range controlStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			shared := open(t)
			store := &loadCounter{ControlStore: shared}
			a, b := NewControls(nil), NewControls(nil)
			a.SetStore(store)
			b.SetStore(shared)
			for _, c := range []*Controls{a, b} {
				if err := c.Refresh(ctx); err != nil {
					t.Fatal(err)
				}
			}
			t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			put := func(c *Controls, id string) {
				t.Helper()
				if err := c.PutKey(ctx, ledger.ControlKey{ID: id, SecretHash: secretHash(id), Status: "active", CreatedAt: t0, UpdatedAt: t0}); err != nil {
					t.Fatal(err)
				}
			}
			put(a, "apikey_1")
			put(b, "apikey_2")
			put(a, "apikey_3")
			if a.lookup(digestOf("apikey_2")) == nil {
				t.Error("instance a missed the key instance b made between its own two changes")
			}
			if n := store.loads.Load(); n != 2 {
				t.Errorf("instance a: %d full loads, want 2 (the first, then the one the gap forced)", n)
			}
			full := NewControls(nil)
			full.SetStore(shared)
			if err := full.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			sameSnapshot(t, a, full)
		})
	}
}

func digestOf(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// sameSnapshot fails unless got serves what want, loaded in full, serves.
func sameSnapshot(t *testing.T, got, want *Controls) {
	t.Helper()
	g, w := got.snap.Load(), want.snap.Load()
	if g.version != w.version {
		t.Errorf("version %d, a full load has %d", g.version, w.version)
	}
	if !reflect.DeepEqual(g.keys, w.keys) {
		t.Errorf("keys differ from a full load:\n got %+v\nwant %+v", g.keys, w.keys)
	}
	if !reflect.DeepEqual(g.workspaces, w.workspaces) {
		t.Errorf("workspaces differ from a full load:\n got %+v\nwant %+v", g.workspaces, w.workspaces)
	}
	if !reflect.DeepEqual(g.archived, w.archived) {
		t.Errorf("archived %v, a full load has %v", g.archived, w.archived)
	}
	if !reflect.DeepEqual(g.byHash, w.byHash) {
		t.Errorf("the secrets accepted differ from a full load's (%d vs %d)", len(g.byHash), len(w.byHash))
	}
}

// An id the store accepts is read back whatever it is, the empty one
// included: a merge that took "" for "no key" left the stored key out of
// a snapshot already at the version that added it, so no poll ever
// reloaded it and its secret never authenticated on this instance.
func TestControlsEmptyIDIsReadBack(t *testing.T) {
	for name, open := range controlStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := open(t)
			c := NewControls(nil)
			c.SetStore(store)
			if err := c.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			if err := c.PutWorkspace(ctx, ledger.ControlWorkspace{ID: "", Name: "unnamed", CreatedAt: t0, UpdatedAt: t0}); err != nil {
				t.Fatal(err)
			}
			if err := c.PutKey(ctx, ledger.ControlKey{ID: "", Name: "k", SecretHash: secretHash("empty-id"), Status: "active", CreatedAt: t0, UpdatedAt: t0}); err != nil {
				t.Fatal(err)
			}
			if err := c.Refresh(ctx); err != nil { // what the poll does
				t.Fatal(err)
			}
			if c.lookup(digestOf("empty-id")) == nil {
				t.Error("the key stored under the empty id does not authenticate")
			}
			full := NewControls(nil)
			full.SetStore(store)
			if err := full.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			sameSnapshot(t, c, full)
		})
	}
}

// fixedStore loads the same controls every time.
type fixedStore struct {
	ledger.ControlStore
	c ledger.Controls
}

func (f fixedStore) LoadControls(context.Context) (ledger.Controls, error) { return f.c, nil }
func (f fixedStore) ControlVersion(context.Context) (int64, error)         { return f.c.Version, nil }

// A change of several keys whose secrets move from one to another (key
// a takes b's, b a new one) merges as a full load reads it, in whichever
// order the rows come: dropping a replaced key's old secret must not drop
// the one another changed key now holds.
func TestControlsMergeOfSecretsMovedBetweenKeys(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	key := func(id, secret string) ledger.ControlKey {
		return ledger.ControlKey{ID: id, SecretHash: secretHash(secret), Status: "active", CreatedAt: t0, UpdatedAt: t0}
	}
	load := func(c ledger.Controls) *controlSnapshot {
		r := NewControls(nil)
		r.SetStore(fixedStore{c: c})
		if err := r.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		return r.snap.Load()
	}
	before := load(ledger.Controls{Version: 1, Keys: []ledger.ControlKey{key("apikey_a", "one"), key("apikey_b", "two")}})
	after := ledger.Controls{Version: 2, Keys: []ledger.ControlKey{key("apikey_a", "two"), key("apikey_b", "three")}}
	want := load(after)
	for _, order := range [][]int{{0, 1}, {1, 0}} {
		ch := ledger.Controls{Version: 2, Keys: []ledger.ControlKey{after.Keys[order[0]], after.Keys[order[1]]}}
		got := before.with(ch)
		if !reflect.DeepEqual(got.byHash, want.byHash) {
			t.Errorf("rows in order %v: secrets %v, a full load accepts %v", order, keyIDsByHash(got), keyIDsByHash(want))
		}
		if !reflect.DeepEqual(got.keys, want.keys) {
			t.Errorf("rows in order %v: keys %+v, a full load %+v", order, got.keys, want.keys)
		}
	}
}

func keyIDsByHash(s *controlSnapshot) map[string]string {
	out := map[string]string{}
	for h, rk := range s.byHash {
		out[hex.EncodeToString(h[:4])] = rk.id.KeyID
	}
	return out
}
