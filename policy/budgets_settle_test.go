package policy

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/ledger"
)

// heldWriter keeps an instance's records until told to write them: the
// ledger writer's batch window (up to 200 ms) made deterministic.
type heldWriter struct {
	mu   sync.Mutex
	recs []ledger.Record
}

func (h *heldWriter) add(r ledger.Record) {
	h.mu.Lock()
	h.recs = append(h.recs, r)
	h.mu.Unlock()
}

// serve admits one request of est on in, settles it at what the upstream
// would bill (cost, or less when its output bound was lowered) and keeps
// its record unwritten; false when refused, with the refusal's message.
func serve(t *testing.T, in *leaseInstance, w *heldWriter, id *Identity, est Estimate, cost int64) (bool, string) {
	t.Helper()
	r, refusal := in.b.AdmitEstimate(context.Background(), id, ledger.Limits{}, "", est, time.Minute)
	if refusal != nil {
		if refusal.Status != 429 {
			t.Fatalf("refusal %d %s", refusal.Status, refusal.Message)
		}
		return false, refusal.Message
	}
	if bound, lowered := r.OutputBound(); lowered {
		cost = min(cost, est.InputPico+bound*est.TokenPico)
	}
	rec := ledger.Record{Time: time.Now(), RequestID: "r", KeyID: id.KeyID, Person: id.PersonID(), Groups: id.Groups, Alias: "m", Status: 200,
		Outcome: ledger.OutcomeOK, CostPicoUSD: cost, Ticket: r.Ticket()}
	r.Settle(cost)
	rec.Lease, rec.LeasePico = r.Lease()
	w.add(rec)
	return true, ""
}

// Newcomer B1: on PostgreSQL, requests sent one after another near a
// limit were refused for the estimate of the one before, still held until
// the writer's batch landed, with a false "budget reached" alert. Now a
// finished request holds only its cost, at once, on both instances (they
// alternate): every request is admitted until real spend reaches the
// limit, and no 100 % alert comes before it does.
func TestBudgetBackToBackRequestsOnPostgres(t *testing.T) {
	dsn := pgtest.FreshSchema(t)
	insts := []*leaseInstance{openLeaseInstance(t, dsn, nil), openLeaseInstance(t, dsn, nil)}
	var spent atomic.Int64
	var early atomic.Int64
	for _, in := range insts {
		in.b.Alert = func(a BudgetAlert) {
			if a.Kind == "100" && spent.Load() < a.LimitPico {
				early.Add(1)
				t.Errorf("100%% alert at $%d pico spent: %+v", spent.Load(), a)
			}
		}
	}
	ten := int64(10)
	id := &Identity{KeyID: "newcomer", Limits: ledger.Limits{BudgetCents: &ten, BudgetPeriod: "monthly"}}
	// A 3-cent worst case (0.2 cents of input), 1.35 cents billed.
	est := Estimate{InputPico: 2e9, TokenPico: 1e8, Tokens: 280}
	w := &heldWriter{}
	n := 0
	for ; n < 20; n++ {
		ok, msg := serve(t, insts[n%2], w, id, est, 135e8)
		if !ok {
			if s := spent.Load(); s < 10e10-est.floor() {
				t.Fatalf("request %d refused at %d pico spent of 10 cents: %s", n+1, s, msg)
			}
			// Spent here, or settled on the other instance and still on
			// its lease until its records land.
			if !strings.Contains(msg, "spent") || !strings.Contains(msg, "held for requests in progress or not yet recorded") {
				t.Errorf("refusal: %s", msg)
			}
			break
		}
		spent.Store(sumCosts(w))
	}
	if s := spent.Load(); s != 10e10 || n != 8 {
		t.Errorf("%d requests admitted, %d pico spent; want 8 and the whole 10 cents", n, s)
	}
	for _, in := range insts {
		close(in.recs)
		<-in.done
	}
	// The records land: each takes what its lease held for it off the
	// rows, and only the leases' unused headroom is left.
	s, err := ledger.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Insert(context.Background(), w.recs); err != nil {
		t.Fatal(err)
	}
	if rows := liveReserved(t, dsn, "newcomer", time.Now()); rows != 0 {
		t.Errorf("%d pico still reserved once every record was written", rows)
	}
}

func sumCosts(w *heldWriter) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int64
	for _, r := range w.recs {
		n += r.CostPicoUSD
	}
	return n
}

// N2 on the lease path: a worst case past what is left is admitted on
// what is left, its output bound lowered, and two instances together
// never reserve past the budget.
func TestBudgetLeaseLowersTheOutputBound(t *testing.T) {
	_, a, b, id := twoOnOneBudget(t, "n2", 500, nil)
	// n:128 × max_tokens 1,000,000 at $0.00001: $1,280 worst case.
	est := Estimate{InputPico: 1e9, TokenPico: 128 * 1e7, Tokens: 1e6}
	r, refusal := a.b.AdmitEstimate(context.Background(), id, ledger.Limits{}, "", est, time.Minute)
	if refusal != nil {
		t.Fatalf("refused: %s", refusal.Message)
	}
	bound, lowered := r.OutputBound()
	if !lowered || est.InputPico+bound*est.TokenPico > 5e12 || bound < 3900 {
		t.Fatalf("bound %d (lowered %v): costs %d pico on a $5 budget", bound, lowered, est.InputPico+bound*est.TokenPico)
	}
	// While it runs, the other instance has no room even for an input.
	if _, refusal := b.b.AdmitEstimate(context.Background(), id, ledger.Limits{}, "", est, time.Minute); refusal == nil ||
		!strings.Contains(refusal.Message, "held for requests in progress or not yet recorded") || !strings.Contains(refusal.Message, "$0.00 spent") {
		t.Fatalf("second instance: %v", refusal)
	}
	r.Settle(0)
}

// N8: an instance that crashes holding budget reservations (three
// requests in flight) gives them back within a minute: its lease's rows
// count for leaseRowsLife past their last renewal, not twice the longest
// timeout. The refusal meanwhile says the room is reserved, not spent.
func TestBudgetCrashedInstanceReservationsReturnWithinAMinute(t *testing.T) {
	clock := newTestClock()
	now := clock.now
	dsn, a, b, id := twoOnOneBudget(t, "crash", 500, now)
	dollar := Estimate{InputPico: 1e12}
	for range 3 {
		// Requests whose timeout is 10 minutes: the lease must not
		// count them for 21.
		if _, refusal := a.b.AdmitEstimate(context.Background(), id, ledger.Limits{}, "", dollar, 21*time.Minute); refusal != nil {
			t.Fatal(refusal.Message)
		}
	}
	// A dies here. B has room for two dollars, not a third.
	for i := range 3 {
		_, refusal := b.b.AdmitEstimate(context.Background(), id, ledger.Limits{}, "", dollar, time.Minute)
		if (refusal == nil) != (i < 2) {
			t.Fatalf("request %d on B: %v", i, refusal)
		}
		if refusal != nil && (!strings.Contains(refusal.Message, "$0.00 spent") || !strings.Contains(refusal.Message, "$5.00 held for requests in progress or not yet recorded")) {
			t.Errorf("refusal: %s", refusal.Message)
		}
	}
	// B lives: its poll renews its lease every second.
	for range 60 {
		clock.Add(int64(time.Second))
		if err := b.b.maintainLeases(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if left := liveReserved(t, dsn, "crash", now()); left != 2e12 {
		t.Errorf("a minute after the crash %d pico is reserved; want only B's $2", left)
	}
	if _, refusal := b.b.AdmitEstimate(context.Background(), id, ledger.Limits{}, "", dollar, time.Minute); refusal != nil {
		t.Errorf("a minute after A crashed, B is still refused: %s", refusal.Message)
	}
}

// N8, restart: an instance restarted under its instance name releases
// the lease its previous process held at once (three requests in flight
// when it was killed); a live process given the same name takes another
// and keeps its rows.
func TestBudgetRestartedInstanceReleasesItsLease(t *testing.T) {
	dsn, a, b, id := twoOnOneBudget(t, "restart", 500, nil)
	ctx := context.Background()
	name := "node-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	claim := func(in *leaseInstance, name string) string {
		t.Helper()
		got, err := in.store.(ledger.InstanceClaimer).ClaimInstance(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := claim(a, name); got != name {
		t.Fatalf("claimed %q, want %q", got, name)
	}
	dollar := Estimate{InputPico: 1e12}
	for range 3 {
		if _, refusal := a.b.AdmitEstimate(ctx, id, ledger.Limits{}, "", dollar, time.Minute); refusal != nil {
			t.Fatal(refusal.Message)
		}
	}
	// A live process given the same name runs under another: a's rows stay.
	if got := claim(b, name); got == name {
		t.Fatal("a second live process took the name of the first")
	}
	if left := liveReserved(t, dsn, "restart", time.Now()); left != 3e12 {
		t.Fatalf("%d pico reserved, want a's $3", left)
	}
	// a is killed (its connections go) and restarts under its name.
	_ = a.store.Close()
	restarted := openLeaseInstance(t, dsn, nil)
	if got := claim(restarted, name); got != name {
		t.Fatalf("restarted under %q, want %q", got, name)
	}
	if left := liveReserved(t, dsn, "restart", time.Now()); left != 0 {
		t.Errorf("%d pico still reserved after the instance restarted", left)
	}
	for i := range 5 {
		if _, refusal := b.b.AdmitEstimate(ctx, id, ledger.Limits{}, "", dollar, time.Minute); refusal != nil {
			t.Fatalf("request %d after the restart: %s", i, refusal.Message)
		}
	}
}
