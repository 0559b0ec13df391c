package ledger

import "testing"

// TestWebSearchFees: searches are charged on top of the tokens, read back
// from a record's cost (what a record priced again keeps), and bounded
// by MaxCost.
func TestWebSearchFees(t *testing.T) {
	p := Prices{Input: 3_000_000, Output: 15_000_000}
	r := Record{InputTokens: 1000, OutputTokens: 100}
	p.Apply(&r)
	tokens := r.CostPicoUSD
	ChargeWebSearches(&r, 3)
	if r.CostPicoUSD != tokens+3*WebSearchFeePico || WebSearchesCharged(&r) != 3 {
		t.Fatalf("cost %d, searches read back %d; want %d and 3", r.CostPicoUSD, WebSearchesCharged(&r), tokens+3*WebSearchFeePico)
	}
	ChargeWebSearches(&r, 1<<62)
	if r.CostPicoUSD != MaxCost || WebSearchFees(-1) != 0 {
		t.Fatalf("cost %d past MaxCost, fees of -1 search %d", r.CostPicoUSD, WebSearchFees(-1))
	}
}
