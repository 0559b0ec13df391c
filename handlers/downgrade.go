package handlers

import (
	"context"
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// HeaderDowngradedFrom names, on an answer, the alias the client asked
// for when a spend limit at its cap sent the request to a cheaper one
// (at_cap downgrade); the answer's model is the one that served it.
const HeaderDowngradedFrom = "X-Modelgate-Downgraded-From"

// downgraded is a request refused by its budgets and sent to an at_cap
// downgrade's alias instead.
type downgraded struct {
	alias string
	est   requestEstimate
	// hold is the reservation of a priced alias's request against the
	// allowances past the caps (nil for a free alias: it costs nothing).
	hold *policy.Reservation
}

// downgrade is where a request refused by its budgets goes instead: the
// alias every limit at its cap names, when that alias costs nothing
// whoever in its chain answers (a free local model), or when its chain's
// dearest prices are within those limits' bounds and the request fits in
// their allowances past the caps, reserved there as any request is. ok
// false: it is refused, with refusal when the allowance refused it (nil:
// the budgets' own refusal stands).
func (g *Gateway) downgrade(ctx context.Context, h http.Header, id *policy.Identity, ws ledger.Limits, rec *ledger.Record, alias string,
	body []byte, info providers.RequestInfo, est requestEstimate) (d downgraded, refusal *providers.APIError, ok bool) {
	to := g.opts.Budgets.Downgrade(id, ws, rec.SessionID, est.budget)
	// A request for the downgrade's alias itself goes the same way: it is
	// what the cap sends every other request to.
	if to == "" || g.chains[to] == nil || !id.Allows(to) {
		return d, nil, false
	}
	d = downgraded{alias: to, est: g.estimate(to, body, info)}
	if b := g.bounds[to]; b.inputPrice > 0 || b.tokenPico > 0 || b.notFree != "" {
		if b.unpriced != "" {
			return d, nil, false
		}
		// A server tool's fees per use are in no price the bound holds.
		if tool := providers.ServerTool(body); tool != "" {
			return d, &providers.APIError{Status: http.StatusTooManyRequests, Type: "insufficient_quota", Code: "budget_exceeded",
				Message: "budget exceeded; past the cap requests go to " + strconv.Quote(to) + ", which does not take server-side tools billed per use (" +
					tool + "): send the request without them"}, false
		}
		if d.hold, refusal = g.opts.Budgets.AdmitDowngrade(ctx, id, ws, rec.SessionID, to, b.inputPrice, b.tokenPico, d.est.budget, d.est.lease); refusal != nil {
			return d, refusal, false
		}
	}
	if to != alias {
		h.Set(HeaderDowngradedFrom, alias)
		rec.DowngradedFrom, rec.Alias = alias, to
	}
	return d, nil, true
}

// notFree is why a request chain serves may cost money, "" when every
// deployment in it, fallbacks included, is free (modellist's Free: an
// unpriced cloud model is not).
func notFree(chain []aliasLink) string {
	for _, l := range chain {
		for _, d := range l.deployments {
			if free, why := d.Entry().Free(); !free {
				return "alias " + strconv.Quote(l.alias) + ": " + why
			}
		}
	}
	return ""
}

// unpriced is why a chain that is not free has no price a downgrade's
// bound can hold it to: a deployment that is not free with no price (a
// model missing from the price table costs money all the same); "" when
// every deployment is free or priced.
func unpriced(chain []aliasLink) string {
	for _, l := range chain {
		for _, d := range l.deployments {
			if free, _ := d.Entry().Free(); !free && d.Prices().IsZero() {
				e := d.Entry()
				return "alias " + strconv.Quote(l.alias) + ": " + e.Provider + "/" + e.Model + " has no price (set model_info input_cost_per_token and output_cost_per_token)"
			}
		}
	}
	return ""
}

// DowngradeTarget says whether alias may be an at_cap downgrade's target
// within bound on this gateway: known is false when the models file has
// no such alias; whyNot is why it may not ("" when it may): a chain that
// is not free, without a bound that lets a priced alias take requests
// past the cap, or with a deployment, fallbacks included, unpriced or
// dearer than the bound (its input price or a cache write's over the
// bound's input).
func (g *Gateway) DowngradeTarget(alias string, bound ledger.DowngradeBound) (known bool, whyNot string) {
	chain, ok := g.chains[alias]
	if !ok || len(chain) == 0 {
		return false, ""
	}
	b := g.bounds[alias]
	switch {
	case b.notFree == "":
		return true, ""
	case !bound.Priced():
		return true, strconv.Quote(alias) + " is not free, and only a free alias, or a priced one under a price bound with an allowance past the cap, may take requests past a cap: " + b.notFree
	case b.unpriced != "":
		return true, strconv.Quote(alias) + " cannot be held to a price bound: " + b.unpriced
	}
	for _, l := range chain {
		for _, d := range l.deployments {
			p, e := d.Prices(), d.Entry()
			out := ledger.Prices{Output: p.Output}.Cost(&ledger.Record{OutputTokens: 1})
			if !bound.Admits(p.DearestInput(), out) {
				input := money.PerMillion(p.Input) + " input"
				if w := p.DearestInput(); w > p.Input {
					input += " (" + money.PerMillion(w) + " to write the prompt cache)"
				}
				return true, strconv.Quote(alias) + " is dearer than the bound (" + money.PerMillion(bound.MaxInputPico) + " input, cache writes included, " +
					money.PerMillion(bound.MaxOutputPico) + " output per million tokens): alias " + strconv.Quote(l.alias) + ": " +
					e.Provider + "/" + e.Model + " costs " + input + ", " + money.PerMillion(out) + " output"
			}
		}
	}
	return true, ""
}
