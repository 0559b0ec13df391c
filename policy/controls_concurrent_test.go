package policy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/ledger"
)

// Two instances, each with its own connection pool on one database, change
// keys and workspaces at once; each ends with a snapshot that, at the
// database's version, is what a full load gives.
func TestControlsConcurrentInstancesMatchFullLoad(t *testing.T) {
	opens := map[string]func(t *testing.T) (a, b ledger.ControlStore){
		"sqlite": func(t *testing.T) (ledger.ControlStore, ledger.ControlStore) {
			p := filepath.Join(t.TempDir(), "ledger.db")
			var out [2]ledger.ControlStore
			for i := range out {
				s, err := ledger.OpenSQLite(p)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				out[i] = s.(ledger.ControlStore)
			}
			return out[0], out[1]
		},
		"postgres": func(t *testing.T) (ledger.ControlStore, ledger.ControlStore) {
			dsn := pgtest.FreshSchema(t)
			var out [2]ledger.ControlStore
			for i := range out {
				s, err := ledger.OpenPostgres(context.Background(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				out[i] = s.(ledger.ControlStore)
			}
			return out[0], out[1]
		},
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			sa, sb := open(t)
			insts := []*Controls{NewControls(nil), NewControls(nil)}
			insts[0].SetStore(sa)
			insts[1].SetStore(sb)
			t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for w := range 4 {
				c := insts[w%2]
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(w), 7))
					for i := range 60 {
						id := fmt.Sprintf("apikey_%d", r.IntN(12))
						ws := fmt.Sprintf("wrkspc_%d", r.IntN(3))
						switch r.IntN(4) {
						case 0, 1:
							sec := fmt.Sprintf("s-%d-%d", w, i)
							_ = c.PutKey(ctx, ledger.ControlKey{ID: id, Name: sec, WorkspaceID: ws, SecretHash: secretHash(sec), Status: "active",
								CreatedAt: t0.Add(time.Duration(r.IntN(3)) * time.Microsecond), UpdatedAt: t0})
						case 2:
							_, _ = c.UpdateKey(ctx, id, func(k *ledger.ControlKey) error { k.Name = fmt.Sprint(w, i); k.Status = "inactive"; return nil })
						case 3:
							if r.IntN(2) == 0 {
								_ = c.PutWorkspace(ctx, ledger.ControlWorkspace{ID: ws, Name: ws, CreatedAt: t0, UpdatedAt: t0})
							} else {
								_, _ = c.UpdateWorkspace(ctx, ws, func(x *ledger.ControlWorkspace) error { x.ArchivedAt = t0; return nil })
							}
						}
					}
				}()
			}
			var rwg sync.WaitGroup
			rwg.Add(1)
			go func() { // a reader, as authentication is
				defer rwg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					for _, c := range insts {
						keys, wss := c.Runtime()
						for _, k := range keys {
							_ = k.ID
						}
						_ = len(wss)
						_ = c.lookup(digestOf("s-0-0"))
						_ = c.archivedWorkspace("wrkspc_1")
					}
				}
			}()
			wg.Wait()
			close(stop)
			rwg.Wait()
			v, err := sa.ControlVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			full := NewControls(nil)
			full.SetStore(sa)
			if err := full.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			for i, c := range insts {
				if c.snap.Load().version == v {
					t.Logf("instance %d at the database's version %d: compared as it is", i, v)
					sameSnapshot(t, c, full)
				}
				if err := c.Refresh(ctx); err != nil {
					t.Fatal(err)
				}
				sameSnapshot(t, c, full)
			}
		})
	}
}
