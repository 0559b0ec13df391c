package policy

import (
	"context"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// A downgrade to a priced alias past a cap (docs/spend-limits-api.md, "At
// the cap"): the spend limits that name the alias, with a bound its
// chain's prices are within, admit the request up to their cap plus their
// allowance; every other budget holds as always. The downgraded request
// is reserved with its own worst case like any other and counted on the
// same spend, so what a period spends past such a cap is at most its
// allowance, and once that is spent too the request is refused.

// AdmitDowngrade is AdmitEstimate for a request sent to the priced alias
// to past a cap, whose chain's dearest prices per token, fallbacks
// included, are inputPico and outputPico: each spend limit whose at_cap
// downgrade names to, with a bound admitting those prices, has room up to
// its cap plus its allowance.
func (b *Budgets) AdmitDowngrade(ctx context.Context, id *Identity, ws ledger.Limits, session, to string, inputPico, outputPico int64, est Estimate, lease time.Duration) (*Reservation, *apierror.Error) {
	if b == nil || id == nil {
		return nil, nil
	}
	now := b.now()
	list := b.applicable(id, ws, session, now)
	for i := range list {
		bg := &list[i]
		if l := bg.limit; l != nil && l.Downgrade == to && l.Bound != nil && l.Bound.Admits(inputPico, outputPico) {
			bg.limitPico += min(max(l.Bound.AllowanceCents, 0), money.MaxBudgetCents) * money.PicoPerCent
		}
	}
	return b.admit(ctx, list, est, lease, now)
}

// allowance is what bg's limit was raised by for a request downgraded to
// a priced alias past its cap: the limit's allowance; 0 for any other
// (a spend limit's budget is otherwise its cap, or a session_budget
// tighter than it).
func (bg *budget) allowance() int64 {
	if bg.limit == nil {
		return 0
	}
	return max(bg.limitPico-bg.limit.Cents*money.PicoPerCent, 0)
}

// allowanceText names, in a refusal, the allowance past bg's cap that a
// downgraded request was admitted against.
func allowanceText(bg *budget) string {
	a := bg.allowance()
	if a == 0 {
		return ""
	}
	return " and the " + dollars(a) + " past it that requests downgraded to " + bg.limit.Downgrade + " may spend"
}
