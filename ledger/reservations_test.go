package ledger

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// openPostgresPair opens two stores on one fresh schema: two instances of
// the gateway on one database.
func openPostgresPair(t *testing.T) (BudgetReserver, Store, BudgetReserver) {
	dsn := freshPostgresSchema(t)
	var stores [2]Store
	for i := range stores {
		s, err := OpenPostgres(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	return stores[0].(BudgetReserver), stores[0], stores[1].(BudgetReserver)
}

func monthlyHold(scope, id string, limit int64, now time.Time) BudgetHold {
	return BudgetHold{Scope: scope, ScopeID: id, Period: "monthly", PeriodStart: PeriodStart("monthly", now), LimitPico: limit}
}

// Two instances reserving concurrently on one budget admit what one would:
// a $5 budget, $1 reservations, 20 requests split over both → 5.
func TestSharedReservationsAdmitAsOneInstance(t *testing.T) {
	a, _, b := openPostgresPair(t)
	now := time.Now()
	holds := []BudgetHold{monthlyHold(ScopeKey, "alice", 5e12, now)}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := a
			if i%2 == 1 {
				rs = b
			}
			refused, _, err := rs.Reserve(context.Background(), holds, uint64(1000+i), 1e12, now, now.Add(time.Minute))
			if err != nil {
				t.Error(err)
				return
			}
			if refused == 0 {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := admitted.Load(); got != 5 {
		t.Fatalf("admitted %d of 20 $1 reservations on a $5 budget over two instances, want 5", got)
	}
}

// A written record ends its reservation in the transaction that adds its
// cost: the budget counts the cost once, never both or neither.
func TestRecordEndsItsReservation(t *testing.T) {
	rs, store, _ := openPostgresPair(t)
	ctx := context.Background()
	now := time.Now()
	holds := []BudgetHold{monthlyHold(ScopeKey, "alice", 3e12, now), monthlyHold(ScopeWorkspace, "team", 100e12, now)}
	for i := range 3 {
		if refused, _, err := rs.Reserve(ctx, holds, uint64(i+1), 1e12, now, now.Add(time.Minute)); err != nil || refused != 0 {
			t.Fatalf("reservation %d: refused %d, %v", i, refused, err)
		}
	}
	refused, used, err := rs.Reserve(ctx, holds, 9, 1e12, now, now.Add(time.Minute))
	if err != nil || refused != 1 || used != 3e12 {
		t.Fatalf("fourth $1 on $3: refused %d used %d err %v; want refused by the key's budget with $3 used", refused, used, err)
	}
	// Two requests settle at 10 cents each; the third is still running.
	recs := []Record{
		{Time: now, KeyID: "alice", Workspace: "team", CostPicoUSD: 1e11, Status: 200, Outcome: "ok", Ticket: 1},
		{Time: now, KeyID: "alice", Workspace: "team", CostPicoUSD: 1e11, Status: 200, Outcome: "ok", Ticket: 2},
	}
	if err := store.Insert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	// $0.20 spent + $1 reserved: $1.80 of room, so one more $1 fits; the
	// next does not (its own $1 on $2.20 used is past $3).
	for i, want := range []int{0, 1} {
		refused, used, err := rs.Reserve(ctx, holds, uint64(20+i), 1e12, now, now.Add(time.Minute))
		if err != nil || refused != want {
			t.Fatalf("after settling, reservation %d: refused %d (used %d), %v; want %d", i, refused, used, err, want)
		}
		if want == 1 && used != 22e11 {
			t.Fatalf("used %d, want $2.20 (0.20 spent + 2 reserved)", used)
		}
	}
}

// A reservation left by a crashed instance stops counting when it expires,
// and the sweep deletes it.
func TestExpiredReservationsStopCounting(t *testing.T) {
	rs, _, other := openPostgresPair(t)
	ctx := context.Background()
	now := time.Now()
	holds := []BudgetHold{monthlyHold(ScopeKey, "bob", 1e12, now)}
	if refused, _, err := rs.Reserve(ctx, holds, 1, 1e12, now, now.Add(2*time.Second)); err != nil || refused != 0 {
		t.Fatalf("first: %d %v", refused, err)
	}
	if refused, _, _ := other.Reserve(ctx, holds, 2, 1e12, now, now.Add(time.Minute)); refused != 1 {
		t.Fatal("the other instance admitted past a reservation it should see")
	}
	later := now.Add(3 * time.Second)
	if refused, _, err := other.Reserve(ctx, holds, 3, 1e12, later, later.Add(time.Minute)); err != nil || refused != 0 {
		t.Fatalf("after expiry: refused %d, %v; want admitted", refused, err)
	}
	if err := rs.SweepReservations(ctx, later); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rs.(*sqlStore).db.QueryRowContext(ctx, `SELECT count(*) FROM budget_reservations`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d reservations after the sweep (%v), want the live one", n, err)
	}
}

func TestSQLiteKeepsReservationsInProcess(t *testing.T) {
	s, err := OpenSQLite(t.TempDir() + "/l.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs, ok := s.(BudgetReserver)
	if !ok || rs.SharesReservations() {
		t.Fatal("SQLite serves one process: its reservations stay in that process")
	}
}

// Two instances inserting batches over the same keys, sessions and hours
// never deadlock (hostile review §11): every writer locks spend and
// roll-up rows in one order.
func TestConcurrentInsertsDoNotDeadlock(t *testing.T) {
	_, a, rb := openPostgresPair(t)
	b := rb.(Store)
	now := time.Now()
	batch := func(seed int) []Record {
		var recs []Record
		for k := range 8 {
			for s := range 5 {
				i := (k*5 + s + seed) % 40
				recs = append(recs, Record{Time: now, KeyID: fmt.Sprint("key", i%8), Workspace: fmt.Sprint("ws", i%3),
					Alias: fmt.Sprint("m", i%4), SessionID: fmt.Sprint("s", i%5), CostPicoUSD: 1e9, Status: 200, Outcome: "ok"})
			}
		}
		return recs
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w, s := range []Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 40 {
				if err := s.Insert(context.Background(), batch(round*7+w*13)); err != nil {
					failed.Add(1)
					t.Errorf("insert: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatal("concurrent inserts failed")
	}
}

// Only a database that cannot be reached makes an instance admit on its
// own count; one that answers with an error, or slowly, does not.
func TestUnreachable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "53300"}, false}, // too many clients: it answered
		{&pgconn.PgError{Code: "40P01"}, false},
		{&pgconn.PgError{Code: "57P01"}, true}, // admin shutdown
		{&pgconn.PgError{Code: "08006"}, true},
		{fmt.Errorf("reserving: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("reserving: %w", context.DeadlineExceeded), false},
		{nil, false},
	} {
		if got := Unreachable(c.err); got != c.want {
			t.Errorf("Unreachable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
