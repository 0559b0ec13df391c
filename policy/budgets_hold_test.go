package policy

import (
	"context"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// TestBatchHoldCountsUntilReleased: a batch's hold counts against the
// key's budget until released (a request that would fit without it is
// refused while it lasts), a second hold past what is left is refused,
// and a hold restored after a restart counts again, once.
func TestBatchHoldCountsUntilReleased(t *testing.T) {
	b := NewBudgets(nil, nil)
	id := &Identity{KeyID: "k", Role: RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(100), BudgetPeriod: "monthly"}}
	ctx := context.Background()
	dollar := int64(money.PicoPerCent * 100)
	expires := time.Now().Add(26 * time.Hour)
	if e := b.HoldBatch(ctx, id, ledger.Limits{}, 1, dollar*6/10, expires); e != nil {
		t.Fatalf("60 cents of a dollar: %v", e)
	}
	if e := b.HoldBatch(ctx, id, ledger.Limits{}, 2, dollar*6/10, expires); e == nil || e.Status != 429 {
		t.Fatalf("a second 60 cents: %v", e)
	}
	if _, e := b.Admit(ctx, id, ledger.Limits{}, "", dollar/2, time.Minute); e == nil {
		t.Fatal("a request of 50 cents passed the hold")
	}
	b.ReleaseBatchHold(ctx, 1)
	r, e := b.Admit(ctx, id, ledger.Limits{}, "", dollar/2, time.Minute)
	if e != nil {
		t.Fatalf("after release: %v", e)
	}
	r.Settle(0)
	b.RestoreBatchHold(id, ledger.Limits{}, 3, dollar*6/10)
	b.RestoreBatchHold(id, ledger.Limits{}, 3, dollar*6/10)
	if _, e := b.Admit(ctx, id, ledger.Limits{}, "", dollar/2, time.Minute); e == nil {
		t.Fatal("a restored hold does not count")
	}
	if _, e := b.Admit(ctx, id, ledger.Limits{}, "", dollar/5, time.Minute); e != nil {
		t.Fatalf("a restored hold counted twice: %v", e)
	}
}
