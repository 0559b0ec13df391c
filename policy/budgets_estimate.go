package policy

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// Estimate bounds a request's cost before it runs: its input at the
// dearest deployment it may reach, and its output bound at that
// deployment's output price for every choice it asks for. A request is
// admitted only when its whole estimate fits in every budget that applies
// (spend plus reservations plus estimate at most the limit). When it does
// not, but the input and one output token per choice do, it is admitted on
// what is left with its output bound lowered to what that pays for, so no
// request can spend past a budget by more than its input's estimation
// error (the input is counted a token per byte, never fewer tokens than
// the upstream bills).
type Estimate struct {
	InputPico int64 // the input's cost
	TokenPico int64 // one output token for every choice; 0: output is free
	Tokens    int64 // the output bound per choice the worst case assumes
}

// Pico is the request's worst case, saturating at ledger.MaxCost as a
// record's cost does (an output bound that would pass it is lowered to
// what MaxCost pays for).
func (e Estimate) Pico() int64 {
	in := min(max(e.InputPico, 0), ledger.MaxCost)
	if e.TokenPico <= 0 || e.Tokens <= 0 {
		return in
	}
	if e.Tokens > (ledger.MaxCost-in)/e.TokenPico {
		return ledger.MaxCost
	}
	return in + e.Tokens*e.TokenPico
}

// floor is the least the request can be admitted on: its input and one
// output token per choice; its whole estimate when the output bound
// cannot be lowered.
func (e Estimate) floor() int64 {
	if e.TokenPico <= 0 || e.Tokens <= 1 {
		return e.Pico()
	}
	return min(max(e.InputPico, 0)+e.TokenPico, e.Pico())
}

// tokensFor is the output bound per choice that pico pays for, at most
// the estimate's own.
func (e Estimate) tokensFor(pico int64) int64 {
	if e.TokenPico <= 0 {
		return e.Tokens
	}
	return min(e.Tokens, max(pico-max(e.InputPico, 0), 0)/e.TokenPico)
}

// grantLocked is what the budgets in list have room for of est: its whole
// worst case when it fits in every one, else what the tightest one has
// left if that covers est's floor. Otherwise it refuses, naming the
// tightest budget's spend and reservations. The caller holds mu.
func (b *Budgets) grantLocked(list []budget, est Estimate, now time.Time) (int64, *apierror.Error) {
	grant, tight := est.Pico(), -1
	for i, bg := range list {
		if room := bg.limitPico - b.usedLocked(bg.key); room < grant {
			grant, tight = room, i
		}
	}
	if tight < 0 || grant >= max(est.floor(), 1) {
		return grant, nil
	}
	bg := list[tight]
	reserved := b.reserved[bg.key]
	return 0, b.refuseLocked(bg, b.usedLocked(bg.key)-reserved, reserved, est.floor(), now)
}

// refuseLocked is the refusal of a request needing at least need that
// budget bg has no room for, which spent spent and holds reserved for
// requests in progress or not yet recorded. The 100 % alert goes when
// spend alone leaves less than need, not when reservations caused the
// refusal (they may be given back). The caller holds mu.
func (b *Budgets) refuseLocked(bg budget, spent, reserved, need int64, now time.Time) *apierror.Error {
	b.refusedLocked(bg, spent, need, now)
	return budgetRefusal(bg, spent, reserved, need, now)
}

// budgetRefusal is the 429 no client retries: x-should-retry: false and a
// retry-after until the budget resets (docs/keys-and-budgets.md, "Budgets, rate limits,
// sessions and alerts"). It names what is spent apart from what requests
// in progress hold, and what this request needed at least.
func budgetRefusal(bg budget, spentPico, reservedPico, needPico int64, now time.Time) *apierror.Error {
	wait := int64(86400)
	reset := "never (a total budget)"
	if !bg.resets.IsZero() {
		wait = int64(bg.resets.Sub(now).Seconds()) + 1
		reset = bg.resets.UTC().Format(time.RFC3339)
	}
	wait = min(max(wait, 61), 86400)
	var m strings.Builder
	fmt.Fprintf(&m, "budget exceeded for %s: %s %s budget%s, %s spent", bg.label(), dollars(bg.limitPico-bg.allowance()), bg.key.period, allowanceText(&bg), dollars(spentPico))
	if reservedPico > 0 {
		// With PostgreSQL this counts what other instances settled but
		// have not recorded yet (it stays on their leases until then).
		fmt.Fprintf(&m, ", %s held for requests in progress or not yet recorded", dollars(reservedPico))
	}
	if spentPico+reservedPico < bg.limitPico && needPico > 0 {
		fmt.Fprintf(&m, ", and this request needs at least %s (its input and one output token)", dollarsUp(needPico))
	}
	m.WriteString("; it resets at ")
	m.WriteString(reset)
	m.WriteString(askHint(&bg))
	return &apierror.Error{Status: http.StatusTooManyRequests, Type: "insufficient_quota", Code: "budget_exceeded",
		RetryAfter: strconv.FormatInt(wait, 10), NoRetry: true, Message: m.String()}
}

// dollars is pico rounded down to the cent; a negative amount is $0.00.
func dollars(pico int64) string { return money.Dollars(max(pico, 0) / money.PicoPerCent) }

// dollarsUp is dollars rounded up to the cent: a need of $0.001 is not
// "$0.00".
func dollarsUp(pico int64) string {
	return dollars(min(max(pico, 0), ledger.MaxCost) + money.PicoPerCent - 1)
}

// splitShared splits what a shared store reported a budget has used into
// spent and reserved: the store counts this instance's settled costs
// whose records are not written yet as reservations (they are still on
// its lease), which are spent. The caller holds mu.
func (b *Budgets) splitShared(k budgetKey, used, spent int64) (int64, int64) {
	for _, l := range b.local {
		if !l.written.IsZero() {
			continue
		}
		for _, lk := range l.keys {
			if lk == k {
				spent += l.pico
				break
			}
		}
	}
	spent = min(spent, used)
	return spent, used - spent
}
