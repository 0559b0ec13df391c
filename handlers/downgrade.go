package handlers

import (
	"net/http"

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
	if b := g.bounds[to]; b.inputPrice > 0 || b.tokenPico > 0 {
		return ""
	}
	h.Set(HeaderDowngradedFrom, alias)
	rec.DowngradedFrom, rec.Alias = alias, to
	return to
}
