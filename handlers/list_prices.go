package handlers

import "github.com/modelgate/modelgate/ledger"

// ListPrices are the prices that bound a cost a coding agent reports of
// model (agentotel.Options.ListPrices): its alias's, the dearest of the
// alias's deployments per token type. A model the models file does not
// know gets the dearest prices of every deployment: pricing it at 0
// would let an agent escape a budget by naming a model the gateway does
// not list, while the dearest known price still bounds what one event
// can count.
func (g *Gateway) ListPrices(model string) ledger.Prices {
	if alias, ok := g.models.Resolve(model); ok {
		if ds := g.backends[alias]; len(ds) > 0 {
			var p ledger.Prices
			for _, d := range ds {
				p = dearest(p, d.Prices())
			}
			return p
		}
	}
	var p ledger.Prices
	for _, ds := range g.backends {
		for _, d := range ds {
			p = dearest(p, d.Prices())
		}
	}
	return p
}

// dearest is a and b's higher price per token type.
func dearest(a, b ledger.Prices) ledger.Prices {
	return ledger.Prices{Input: max(a.Input, b.Input), Output: max(a.Output, b.Output), CacheRead: max(a.CacheRead, b.CacheRead),
		CacheWrite5m: max(a.CacheWrite5m, b.CacheWrite5m), CacheWrite1h: max(a.CacheWrite1h, b.CacheWrite1h)}
}
