package ledger

// Fees per use: what a provider bills on top of tokens for a server tool
// it runs itself.

// WebSearchFeePico is one web search an Anthropic model ran
// (usage.server_tool_use.web_search_requests): $10 per 1,000 searches,
// at every service tier (a batch's discount is of tokens).
const WebSearchFeePico = 10_000_000_000

// WebSearchFees is what n web searches cost, at most MaxCost as a
// record's cost.
func WebSearchFees(n int64) int64 {
	return min(max(n, 0), MaxCost/WebSearchFeePico) * WebSearchFeePico
}

// ChargeWebSearches adds n web searches' fees to r's cost, which stays
// within MaxCost.
func ChargeWebSearches(r *Record, n int64) {
	if n > 0 {
		r.CostPicoUSD = min(plusSat(r.CostPicoUSD, WebSearchFees(n)), MaxCost)
	}
}

// WebSearchesCharged is how many web searches' fees r's cost holds over
// what its prices make of its tokens: what a record priced again from
// its tokens (a cut answer's floor) charges again.
func WebSearchesCharged(r *Record) int64 {
	return max(r.CostPicoUSD-r.Prices.Cost(r), 0) / WebSearchFeePico
}
