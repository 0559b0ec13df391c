package admin

import (
	"context"
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/spendlimit"
)

// The at_cap extension's bound on a downgrade to a priced alias
// (docs/spend-limits-api.md, "At the cap"): max_price in cents per
// million tokens, allowance in cents, both decimal strings as amounts.

// boundOf reads c's max_price and allowance: both or neither.
func boundOf(c *adminapi.AtCap) (ledger.DowngradeBound, string) {
	var b ledger.DowngradeBound
	if c.MaxPrice == nil && c.Allowance == "" {
		return b, ""
	}
	if c.MaxPrice == nil || c.Allowance == "" {
		return b, "at_cap: a priced downgrade needs both max_price ({\"input\": \"15\", \"output\": \"60\"}: cents per million tokens) and allowance (cents requests past the cap may spend, e.g. \"500\"); a free alias needs neither"
	}
	var err error
	if b.MaxInputPico, err = money.ParsePerMillion(c.MaxPrice.Input, money.CentsPerMillion); err != nil {
		return b, "at_cap.max_price.input: " + err.Error()
	}
	if b.MaxOutputPico, err = money.ParsePerMillion(c.MaxPrice.Output, money.CentsPerMillion); err != nil {
		return b, "at_cap.max_price.output: " + err.Error()
	}
	if b.AllowanceCents, err = money.ParseCents(c.Allowance); err != nil {
		return b, "at_cap.allowance: " + err.Error()
	}
	if !b.Priced() {
		return b, "at_cap: a priced downgrade needs a non-zero allowance and max_price; a free alias needs neither"
	}
	return b, ""
}

// atCapWire is l's at_cap as the API shows it.
func atCapWire(l ledger.SpendLimit) *adminapi.AtCap {
	c := &adminapi.AtCap{Action: "downgrade", Alias: l.Downgrade}
	if b := l.Bound; b.Priced() {
		c.MaxPrice = &adminapi.PricePerMillion{Input: money.FormatPerMillion(b.MaxInputPico, money.CentsPerMillion),
			Output: money.FormatPerMillion(b.MaxOutputPico, money.CentsPerMillion)}
		c.Allowance = strconv.FormatInt(b.AllowanceCents, 10)
	}
	return c
}

// boundText is b for the audit log, "" when it allows only a free alias.
func boundText(b ledger.DowngradeBound) string {
	if !b.Priced() {
		return ""
	}
	return "max_price " + money.PerMillion(b.MaxInputPico) + " " + money.PerMillion(b.MaxOutputPico) + " per million tokens, allowance " + money.Dollars(b.AllowanceCents)
}

// keepAtCap gives the limit an approval writes for req's person what
// happens at the cap of their own limit in its period now (set for them,
// or their group's default): raising a limit keeps its downgrade and
// bound. false: the limits could not be read (the answer is written).
func keepAtCap(ctx context.Context, w http.ResponseWriter, st spendStore, req ledger.IncreaseRequest, limit *ledger.SpendLimit) bool {
	all, err := st.SpendLimits(ctx)
	if err != nil {
		storeFailed(w, err)
		return false
	}
	own, ok := spendlimit.NewSet(all).Person(spendlimit.Caller{Person: req.Person, Groups: ledger.GroupLines(req.Groups)}, limit.Period)
	if ok {
		limit.Downgrade = own.Downgrade
		if own.Bound != nil {
			limit.Bound = *own.Bound
		}
	}
	return true
}
