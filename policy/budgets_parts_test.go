package policy

import (
	"context"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
)

// A resumed stream's cut part is counted once: within the request's
// reservation until its own record is written, then from the database
// only, while the continuation still runs under the rest of the
// reservation; and once more only when the continuation's record is
// written (#41 item 2: the part was counted twice, in the database and in
// the reservation, until the continuation's record was written).
func TestCutPartCountedOnce(t *testing.T) {
	clock := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	table := &spendTable{id: "k1"}
	b := NewBudgets(func() ledger.SpendStore { return table }, now)
	id := &Identity{KeyID: "k1", Limits: ledger.Limits{BudgetCents: ledger.Cents(100)}} // $1
	const cent = 1e10
	used := func() int64 {
		b.mu.Lock()
		defer b.mu.Unlock()
		k := budgetKey{ledger.ScopeKey, "k1", "total", ledger.PeriodStart("total", clock).UnixMicro()}
		return b.usedLocked(k) / cent
	}
	write := func(rec ledger.Record) {
		table.add(rec.CostPicoUSD)
		b.Written([]ledger.Record{rec})
		clock = clock.Add(time.Millisecond)
		if err := b.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	hold, refusal := b.Admit(context.Background(), id, ledger.Limits{}, "", 50*cent, time.Minute)
	if refusal != nil {
		t.Fatal(refusal.Message)
	}
	if got := used(); got != 50 {
		t.Fatalf("admitted: %d cents used, want the 50 reserved", got)
	}
	p := hold.CountPart(20 * cent)
	if got := used(); got != 50 {
		t.Errorf("the part counted: %d cents used, want 50 (20 spent within the 50 reserved)", got)
	}
	write(ledger.Record{Ticket: p.Ticket, Lease: p.Lease, LeasePico: p.LeasePico, CostPicoUSD: 20 * cent})
	if got := used(); got != 50 {
		t.Errorf("the part's record written, the continuation still running: %d cents used, want 50 (the part once)", got)
	}
	hold.Settle(25 * cent)
	if got := used(); got != 45 {
		t.Errorf("the rest settled at 25: %d cents used, want 45", got)
	}
	rec := ledger.Record{Ticket: hold.Ticket(), CostPicoUSD: 25 * cent}
	rec.Lease, rec.LeasePico = hold.Lease()
	write(rec)
	if got := used(); got != 45 {
		t.Errorf("both records written: %d cents used, want 45", got)
	}
}

// The same on two instances sharing a PostgreSQL ledger with budget
// leases: once the cut part's record is written, the other instance
// finds the part once (spent), not also in the first instance's lease,
// and admits a request that fits only so.
func TestCutPartCountedOnceAcrossInstances(t *testing.T) {
	dsn, a, other, id := twoOnOneBudget(t, "parts", 100, nil)
	const cent = int64(1e10)
	ctx := context.Background()
	hold, refusal := a.b.Admit(ctx, id, ledger.Limits{}, "", 50*cent, time.Minute)
	if refusal != nil {
		t.Fatal(refusal.Message)
	}
	if hold.lease == nil {
		t.Fatal("the reservation was not drawn from a lease")
	}
	p := hold.CountPart(20 * cent)
	a.recs <- ledger.Record{Time: time.Now(), RequestID: "part", KeyID: id.KeyID, Alias: "m", Status: 502, Outcome: ledger.OutcomeError,
		CostPicoUSD: 20 * cent, Ticket: p.Ticket, Lease: p.Lease, LeasePico: p.LeasePico}
	if !testwait.Until(func() bool { return liveReserved(t, dsn, id.KeyID, time.Now()) == 30*cent }) {
		t.Fatalf("the lease holds %d pico after the part's record was written; want the 30 cents left of the 50", liveReserved(t, dsn, id.KeyID, time.Now()))
	}
	if err := other.b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	// 20 spent + 30 still reserved by the first instance: 50 cents left.
	r2, refusal := other.b.Admit(ctx, id, ledger.Limits{}, "", 50*cent, time.Minute)
	if refusal != nil {
		t.Fatalf("the other instance refused 50 of the 50 cents left: %s", refusal.Message)
	}
	r2.Settle(0)
	hold.Settle(25 * cent)
	rec := ledger.Record{Time: time.Now(), RequestID: "rest", KeyID: id.KeyID, Alias: "m", Status: 200, Outcome: ledger.OutcomeOK,
		CostPicoUSD: 25 * cent, Ticket: hold.Ticket()}
	rec.Lease, rec.LeasePico = hold.Lease()
	a.recs <- rec
	a.flush()
	if got := liveReserved(t, dsn, id.KeyID, time.Now()); got > 5*cent {
		t.Errorf("%d pico still reserved after both records were written; want at most the unused 5 cents of headroom", got)
	}
}
