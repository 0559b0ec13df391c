package policy

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/ledger"
)

// leaseInstance is one gateway's budgets on a shared PostgreSQL ledger,
// with a writer that inserts its requests' records in batches and
// reports them written, as the ledger writer does.
type leaseInstance struct {
	b     *Budgets
	store ledger.Store
	recs  chan ledger.Record
	done  chan struct{}
}

func openLeaseInstance(t testing.TB, dsn string, now func() time.Time) *leaseInstance {
	t.Helper()
	s, err := ledger.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	in := &leaseInstance{store: s, recs: make(chan ledger.Record, 4096), done: make(chan struct{})}
	in.b = NewBudgets(func() ledger.SpendStore { return s.(ledger.SpendStore) }, now)
	go func() {
		defer close(in.done)
		var batch []ledger.Record
		flush := func() {
			if len(batch) == 0 {
				return
			}
			if err := s.Insert(context.Background(), batch); err != nil {
				t.Errorf("insert: %v", err)
			}
			in.b.Written(batch)
			batch = batch[:0]
		}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case r, ok := <-in.recs:
				if !ok {
					flush()
					return
				}
				batch = append(batch, r)
			case <-tick.C:
				flush()
			}
		}
	}()
	t.Cleanup(func() { _ = s.Close() })
	return in
}

// spend admits one request of est and, when admitted, settles it at its
// estimate and hands its record to the writer.
func (in *leaseInstance) spend(t testing.TB, id *Identity, est int64, now time.Time) bool {
	r, refusal := in.b.Admit(context.Background(), id, ledger.Limits{}, "", est, time.Minute)
	if refusal != nil {
		if refusal.Status != 429 {
			t.Errorf("refusal %d %s", refusal.Status, refusal.Message)
		}
		return false
	}
	rec := ledger.Record{Time: now, RequestID: "r", KeyID: id.KeyID, Alias: "m", Status: 200, Outcome: ledger.OutcomeOK,
		CostPicoUSD: est, Ticket: r.Ticket()}
	rec.Lease, rec.LeasePico = r.Lease()
	r.Settle(est)
	in.recs <- rec
	return true
}

func (in *leaseInstance) flush() {
	close(in.recs)
	<-in.done
}

// twoOnOneBudget is two instances on a fresh schema and a key with a
// monthly budget of cents.
func twoOnOneBudget(t *testing.T, keyID string, cents int64, now func() time.Time) (string, *leaseInstance, *leaseInstance, *Identity) {
	t.Helper()
	dsn := pgtest.FreshSchema(t)
	return dsn, openLeaseInstance(t, dsn, now), openLeaseInstance(t, dsn, now),
		&Identity{KeyID: keyID, Limits: ledger.Limits{BudgetCents: &cents, BudgetPeriod: "monthly"}}
}

// testClock is a clock the test moves.
type testClock struct{ atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.Store(time.Now().UnixNano())
	return c
}

func (c *testClock) now() time.Time { return time.Unix(0, c.Load()) }

// liveReserved is what live reservation rows count against a budget.
func liveReserved(t *testing.T, dsn string, keyID string, now time.Time) int64 {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(`SELECT coalesce(sum(pico), 0) FROM budget_reservations WHERE scope = $1 AND scope_id = $2 AND expires_us > $3`,
		ledger.ScopeKey, keyID, now.UnixMicro()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Two instances hammering one budget with leases never admit more than
// it holds, and admit what serial reservations would: $5 at 1 cent a
// request is 500 requests, whoever sends them. Leases grow past the
// waiting requests (the load is steady for well over 100 ms), so most
// admissions touch no database.
func TestBudgetLeasesOfTwoInstancesNeverOverAdmit(t *testing.T) {
	dsn, a, b, id := twoOnOneBudget(t, "alice", 500, nil)
	const cent = int64(1e10)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		in := []*leaseInstance{a, b}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for refusals := 0; refusals < 3; {
				if in.spend(t, id, cent, time.Now()) {
					admitted.Add(1)
					time.Sleep(time.Millisecond) // a steady load, not a burst
				} else {
					refusals++
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	a.flush()
	b.flush()
	if got := admitted.Load(); got > 500 || got < 495 {
		t.Errorf("admitted %d 1-cent requests on a $5 budget over two instances; want 500 (never more); %d admissions counted alone while the database failed",
			got, a.b.SharedFailures.Load()+b.b.SharedFailures.Load())
	}
	if trips := a.b.LeaseTopUps.Load() + b.b.LeaseTopUps.Load(); trips*2 > admitted.Load() {
		t.Errorf("%d top-ups for %d admissions: the leases did not serve most requests in memory", trips, admitted.Load())
	} else {
		t.Logf("%d admissions, %d top-ups", admitted.Load(), trips)
	}
	// Every record was written: what is left is headroom an instance
	// holds and cannot use, less than a request's estimate (near the limit
	// a top-up grants exactly the estimates), and it is given back once
	// idle.
	if rows := liveReserved(t, dsn, "alice", time.Now()); rows >= cent {
		t.Errorf("%d pico still reserved after every record was written at the limit", rows)
	}
	time.Sleep(leaseIdle)
	for _, in := range []*leaseInstance{a, b} {
		if err := in.b.maintainLeases(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if rows := liveReserved(t, dsn, "alice", time.Now()); rows != 0 {
		t.Errorf("%d pico still reserved after both instances were idle", rows)
	}
}

// A lease's unused headroom is given back once the instance has not drawn
// from it for a while, so another instance can spend it; a lease's rows
// of an instance that died stop counting when they expire.
func TestIdleBudgetLeaseIsGivenBack(t *testing.T) {
	clock := newTestClock()
	now := clock.now
	dsn, a, b, id := twoOnOneBudget(t, "bob", 10000, now)
	const cent = int64(1e10)
	// A steady cent every 10 ms: a dollar a second, so a top-up asks for
	// a quarter's headroom beyond its requests.
	for range 60 {
		if !a.spend(t, id, cent, now()) {
			t.Fatal("refused far from the limit")
		}
		clock.Add(int64(10 * time.Millisecond))
	}
	a.flush()
	held := liveReserved(t, dsn, "bob", now())
	if held <= 0 {
		t.Fatalf("no headroom held after a steady load (%d pico): the lease did not grow past its requests", held)
	}
	// A's headroom counts against B until A gives it back.
	c := &leaseTicket{}
	a.b.mu.Lock()
	for _, l := range a.b.leases.m {
		c = l.cur
	}
	a.b.mu.Unlock()
	if c.held != held || c.drawn != 0 {
		t.Errorf("the lease holds %d (drawn %d) here and %d in the database; the records took their estimates off both", c.held, c.drawn, held)
	}
	clock.Add(int64(leaseIdle))
	if err := a.b.maintainLeases(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := liveReserved(t, dsn, "bob", now()); left != 0 {
		t.Errorf("%d pico still held after the lease was idle for %v", left, leaseIdle)
	}

	// B takes a lease and dies holding it: its rows stop counting when
	// they expire.
	for range 30 {
		if !b.spend(t, id, cent, now()) {
			t.Fatal("refused far from the limit")
		}
		clock.Add(int64(10 * time.Millisecond))
	}
	b.flush()
	if liveReserved(t, dsn, "bob", now()) <= 0 {
		t.Fatal("B holds no headroom")
	}
	clock.Add(int64(leaseRowsLife))
	if left := liveReserved(t, dsn, "bob", now()); left != 0 {
		t.Errorf("a dead instance's lease counts %d pico past its expiry", left)
	}
}

// Near the limit a top-up grants exactly the waiting request's estimate:
// a $1 budget, with 95 cents spent through a lease, admits five more
// 1-cent requests and no sixth, on either instance.
func TestBudgetLeaseNearTheLimitAdmitsSerially(t *testing.T) {
	dsn := pgtest.FreshSchema(t)
	a, b := openLeaseInstance(t, dsn, nil), openLeaseInstance(t, dsn, nil)
	one := int64(100)
	id := &Identity{KeyID: "carol", Limits: ledger.Limits{BudgetCents: &one, BudgetPeriod: "monthly"}}
	const cent = int64(1e10)
	for range 95 {
		if !a.spend(t, id, cent, time.Now()) {
			t.Fatal("refused below the limit")
		}
	}
	n := 0
	for i := range 10 {
		if []*leaseInstance{b, a}[i%2].spend(t, id, cent, time.Now()) {
			n++
		}
	}
	a.flush()
	b.flush()
	if n != 5 {
		t.Errorf("admitted %d 1-cent requests with 5 cents left; want 5", n)
	}
}

// BenchmarkBudgetAdmitLeased: a request admitted on the lease this
// instance holds and settled, the common case under load (the gw-controls
// bench's key), its record written in batches beside it as the writer does.
func BenchmarkBudgetAdmitLeased(b *testing.B) {
	in := openLeaseInstance(b, pgtest.FreshSchema(b), nil)
	budget := int64(1 << 40)
	id := &Identity{KeyID: "alice", Workspace: "team", Limits: ledger.Limits{BudgetCents: &budget, BudgetPeriod: "monthly"}}
	ws := ledger.Limits{BudgetCents: &budget, BudgetPeriod: "monthly"}
	for range 1000 { // the lease grows to the load
		in.spendIn(b, id, ws, 1e8)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		in.spendIn(b, id, ws, 1e8)
	}
	b.StopTimer()
	in.flush()
}

// spendIn is spend with the workspace's limits too.
func (in *leaseInstance) spendIn(t testing.TB, id *Identity, ws ledger.Limits, est int64) {
	r, refusal := in.b.Admit(context.Background(), id, ws, "", est, time.Minute)
	if refusal != nil {
		t.Fatalf("refusal %d %s", refusal.Status, refusal.Message)
	}
	rec := ledger.Record{Time: time.Now(), RequestID: "r", KeyID: id.KeyID, Workspace: id.Workspace, Alias: "m", Status: 200, Outcome: ledger.OutcomeOK,
		CostPicoUSD: est, Ticket: r.Ticket()}
	rec.Lease, rec.LeasePico = r.Lease()
	r.Settle(est)
	in.recs <- rec
}
