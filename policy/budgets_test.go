package policy

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// spendTable is a SpendStore whose rows the test writes, as the ledger
// writer would with each record.
type spendTable struct {
	mu   sync.Mutex
	pico int64
	id   string
}

func (s *spendTable) CurrentSpend(_ context.Context, now time.Time, _ []string) ([]ledger.Spend, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []ledger.Spend{{Scope: ledger.ScopeKey, ScopeID: s.id, Period: "total", PeriodStart: ledger.PeriodStart("total", now), SpentPico: s.pico}}, nil
}

func (s *spendTable) add(pico int64) {
	s.mu.Lock()
	s.pico += pico
	s.mu.Unlock()
}

// A settled cost is counted once: locally until the writer reports its
// record written, from the database after the next refresh, never both,
// whether the writer reports before the request settles (a durable
// request) or after.
func TestBudgetSpendCountedOnce(t *testing.T) {
	clock := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	table := &spendTable{id: "k1"}
	b := NewBudgets(func() ledger.SpendStore { return table }, now)
	id := &Identity{KeyID: "k1", Limits: ledger.Limits{BudgetCents: ledger.Cents(100)}} // $1
	const cost = 60 * 1e10                                                              // 60 cents
	spent := func() string { return b.Status(id, ledger.Limits{}, "")[0].Spent }

	for _, writtenFirst := range []bool{false, true} {
		hold, refusal := b.Admit(context.Background(), id, ledger.Limits{}, "", 1e10, time.Minute)
		if refusal != nil {
			t.Fatalf("writtenFirst=%v: refused: %s", writtenFirst, refusal.Message)
		}
		rec := ledger.Record{Ticket: hold.Ticket(), CostPicoUSD: cost}
		if writtenFirst {
			table.add(cost)
			b.Written([]ledger.Record{rec})
			hold.Settle(cost)
		} else {
			hold.Settle(cost)
			if got := spent(); got != "60" && got != "120" {
				t.Fatalf("after settling, before the write: spent %s cents", got)
			}
			clock = clock.Add(300 * time.Millisecond)
			table.add(cost)
			b.Written([]ledger.Record{rec})
		}
		clock = clock.Add(time.Millisecond)
		if err := b.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := "60"
		if writtenFirst {
			want = "120"
		}
		if got := spent(); got != want {
			t.Errorf("writtenFirst=%v: spent %s cents after the refresh, want %s (counted once)", writtenFirst, got, want)
		}
	}
	// The budget is now spent (120 of 100 cents): refused, and no sooner.
	if _, refusal := b.Admit(context.Background(), id, ledger.Limits{}, "", 1e10, time.Minute); refusal == nil {
		t.Error("a spent budget admitted a request")
	}
}

// A settled cost whose record is not written yet (the database is slow or
// down) keeps counting across refreshes.
func TestBudgetUnwrittenSpendKeepsCounting(t *testing.T) {
	clock := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	table := &spendTable{id: "k1"}
	b := NewBudgets(func() ledger.SpendStore { return table }, func() time.Time { return clock })
	id := &Identity{KeyID: "k1", Limits: ledger.Limits{BudgetCents: ledger.Cents(100)}}
	hold, _ := b.Admit(context.Background(), id, ledger.Limits{}, "", 1e10, time.Minute)
	hold.Settle(100 * 1e10)
	for range 5 {
		clock = clock.Add(10 * time.Second)
		if err := b.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, refusal := b.Admit(context.Background(), id, ledger.Limits{}, "", 1e10, time.Minute); refusal == nil {
		t.Error("a cost the database does not show yet was forgotten")
	}
}

// BenchmarkBudgetAdmitWithBacklog: admission while 10,000 settled costs
// wait for the database (an outage, or a burst the writer is behind on).
func BenchmarkBudgetAdmitWithBacklog(b *testing.B) {
	bud := NewBudgets(nil, nil)
	id := &Identity{KeyID: "k1", Limits: ledger.Limits{BudgetCents: ledger.Cents(1 << 40)}}
	for range 10000 {
		hold, _ := bud.Admit(context.Background(), id, ledger.Limits{}, "", 1, time.Minute)
		hold.Settle(1)
	}
	b.ResetTimer()
	for range b.N {
		hold, refusal := bud.Admit(context.Background(), id, ledger.Limits{}, "", 1, time.Minute)
		if refusal != nil {
			b.Fatal(refusal.Message)
		}
		hold.Settle(0)
	}
}

// A request no budget applies to costs admission no allocation, and one
// with all three budgets one slice for them and its session scope's id.
func TestApplicableAllocations(t *testing.T) {
	now := time.Now()
	none := &Identity{KeyID: "k", Workspace: "w"}
	if n := testing.AllocsPerRun(100, func() { _ = applicable(none, ledger.Limits{}, "s", now) }); n != 0 {
		t.Errorf("no budget: %v allocations", n)
	}
	c := ledger.Cents(100)
	all := &Identity{KeyID: "k", Workspace: "w", Limits: ledger.Limits{BudgetCents: c, SessionBudgetCents: c}}
	var got []budget
	if n := testing.AllocsPerRun(100, func() { got = applicable(all, ledger.Limits{BudgetCents: c}, "s", now) }); n != 2 || len(got) != 3 {
		t.Errorf("three budgets: %v allocations, %d budgets", n, len(got))
	}
}

// A worst case past what one request may cost (ledger.MaxCost, the most
// a record counts) is lowered to what that pays for even when the budget
// could hold it: the record would count no more, so the budget could
// not either.
func TestBudgetLowersAWorstCasePastMaxCost(t *testing.T) {
	b := NewBudgets(nil, nil)
	million := int64(1e8) // $1,000,000
	id := &Identity{KeyID: "rich", Limits: ledger.Limits{BudgetCents: &million, BudgetPeriod: "monthly"}}
	est := Estimate{InputPico: 1e9, TokenPico: 128 * 1e8, Tokens: 1e9}
	r, refusal := b.AdmitEstimate(context.Background(), id, ledger.Limits{}, "", est, time.Minute)
	if refusal != nil {
		t.Fatal(refusal.Message)
	}
	bound, lowered := r.OutputBound()
	if !lowered || est.InputPico+bound*est.TokenPico > ledger.MaxCost {
		t.Errorf("bound %d (lowered %v): up to %d pico, past MaxCost %d", bound, lowered, est.InputPico+bound*est.TokenPico, int64(ledger.MaxCost))
	}
	r.Settle(0)
}
