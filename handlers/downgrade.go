package handlers

import (
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// HeaderDowngradedFrom names, on an answer, the alias the client asked
// for when a spend limit at its cap sent the request to a cheaper one
// (at_cap downgrade); the answer's model is the one that served it.
const HeaderDowngradedFrom = "X-Modelgate-Downgraded-From"

// downgrade is the alias a request refused by its budgets is served by
// instead, when every limit at its cap names one and that alias costs
// nothing whoever in its chain answers (a free local model: a paid
// fallback would spend past the cap); "" when it is to be refused.
func (g *Gateway) downgrade(h http.Header, id *policy.Identity, ws ledger.Limits, rec *ledger.Record, alias string, est requestEstimate) string {
	to := g.opts.Budgets.Downgrade(id, ws, rec.SessionID, est.budget)
	if to == "" || to == alias || g.chains[to] == nil || !id.Allows(to) {
		return ""
	}
	if b := g.bounds[to]; b.inputPrice > 0 || b.tokenPico > 0 || b.notFree != "" {
		return ""
	}
	h.Set(HeaderDowngradedFrom, alias)
	rec.DowngradedFrom, rec.Alias = alias, to
	return to
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

// DowngradeTarget says whether alias may be an at_cap downgrade's target
// on this gateway: known is false when the models file has no such alias;
// whyNot is why a request it serves may cost money ("" when it is free).
func (g *Gateway) DowngradeTarget(alias string) (known bool, whyNot string) {
	chain, ok := g.chains[alias]
	if !ok || len(chain) == 0 {
		return false, ""
	}
	return true, g.bounds[alias].notFree
}
