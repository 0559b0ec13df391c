package ledger

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestOnePendingIncreaseRequestConcurrently (hostile pass 10): a person
// has at most one pending increase request per period, enforced by the
// database: of several creates at once, through two instances, one
// stores its request and the others get ErrIncreasePending; another
// period, another person, and a new request once the first is resolved
// are stored.
func TestOnePendingIncreaseRequestConcurrently(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) (*sqlStore, *sqlStore){
		"sqlite": func(t *testing.T) (*sqlStore, *sqlStore) {
			path := filepath.Join(t.TempDir(), "l.db")
			return openSQLiteStore(t, path), openSQLiteStore(t, path)
		},
		"postgres": func(t *testing.T) (*sqlStore, *sqlStore) {
			dsn := freshPostgresSchema(t)
			return openPostgresStore(t, dsn), openPostgresStore(t, dsn)
		},
	} {
		t.Run(name, func(t *testing.T) {
			a, b := open(t)
			ctx := context.Background()
			const n = 8
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := []*sqlStore{a, b}[i%2]
					_, errs[i] = s.CreateIncreaseRequest(ctx, IncreaseRequest{Person: "bob", Period: "monthly", AmountCents: int64(1000 + i), Reason: "spam"})
				}()
			}
			wg.Wait()
			stored := 0
			for _, err := range errs {
				switch {
				case err == nil:
					stored++
				case !errors.Is(err, ErrIncreasePending):
					t.Fatalf("a concurrent create failed otherwise: %v", err)
				}
			}
			if stored != 1 {
				t.Fatalf("%d of %d concurrent creates were stored, want 1", stored, n)
			}
			pending, found, err := b.PendingIncreaseRequest(ctx, "bob", "monthly")
			if err != nil || !found {
				t.Fatalf("pending: %v %v", found, err)
			}
			for _, r := range []IncreaseRequest{{Person: "bob", Period: "weekly", AmountCents: 5}, {Person: "carol", Period: "monthly", AmountCents: 5}} {
				if _, err := a.CreateIncreaseRequest(ctx, r); err != nil {
					t.Fatalf("%s %s: %v", r.Person, r.Period, err)
				}
			}
			if ok, _, err := a.ResolveIncreaseRequest(ctx, pending.ID, RequestDenied, "alice", time.Now(), nil); !ok || err != nil {
				t.Fatalf("deny: %v %v", ok, err)
			}
			if _, err := b.CreateIncreaseRequest(ctx, IncreaseRequest{Person: "bob", Period: "monthly", AmountCents: 7}); err != nil {
				t.Fatalf("a new request after the first was denied: %v", err)
			}
		})
	}
}

// TestPendingRequestMigrationSupersedesDuplicates: a ledger that already
// holds several pending requests of one person and period (stored before
// the database enforced one) migrates: the newest stays pending, the
// older ones are resolved as superseded.
func TestPendingRequestMigrationSupersedesDuplicates(t *testing.T) {
	for name, open := range sqlStores() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			// Back to before the migration.
			for _, q := range []string{`DROP INDEX spend_limit_increase_requests_pending`, `DELETE FROM schema_migrations WHERE version = 37`} {
				if _, err := s.db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			base := time.Now().Add(-time.Hour)
			var ids []string
			for i := range 3 {
				r, err := s.CreateIncreaseRequest(ctx, IncreaseRequest{Person: "bob", Period: "monthly", AmountCents: int64(100 + i), CreatedAt: base.Add(time.Duration(i) * time.Minute)})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, r.ID)
			}
			if err := s.migrate(ctx); err != nil {
				t.Fatalf("the migration failed on duplicate pending requests: %v", err)
			}
			for i, id := range ids {
				r, _, err := s.IncreaseRequest(ctx, id)
				want := RequestSuperseded
				if i == 2 {
					want = RequestPending
				}
				if err != nil || r.Status != want || (want == RequestSuperseded && r.ResolvedAt.IsZero()) {
					t.Fatalf("request %d after the migration: %+v %v, want %s", i, r, err, want)
				}
			}
			if _, err := s.CreateIncreaseRequest(ctx, IncreaseRequest{Person: "bob", Period: "monthly", AmountCents: 1}); !errors.Is(err, ErrIncreasePending) {
				t.Fatalf("after the migration a second pending request: %v", err)
			}
		})
	}
}

// sqlStores open a fresh ledger of each database.
func sqlStores() map[string]func(t *testing.T) *sqlStore {
	return map[string]func(t *testing.T) *sqlStore{
		"sqlite":   func(t *testing.T) *sqlStore { return openSQLiteStore(t, filepath.Join(t.TempDir(), "l.db")) },
		"postgres": func(t *testing.T) *sqlStore { return openPostgresStore(t, freshPostgresSchema(t)) },
	}
}
