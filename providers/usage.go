// Package providers translates between the OpenAI Chat Completions, Anthropic
// Messages and Ollama wire formats and reads token usage out of each. It is
// plain Go: bodies in, bodies out, no HTTP clients and no Caddy.
package providers

// Usage is what one response consumed, in the ledger's terms. InputTokens is
// uncached input only (Anthropic's definition); the total prompt size is
// InputTokens + CacheCreation5m + CacheCreation1h + CacheReadTokens.
type Usage struct {
	InputTokens     int64
	CacheCreation5m int64
	CacheCreation1h int64
	CacheReadTokens int64
	OutputTokens    int64
	// ServiceTier is the tier the upstream says served the request
	// (OpenAI's top-level service_tier, Anthropic's usage.service_tier),
	// as sent; empty when it said nothing.
	ServiceTier string
	// WebSearches are the web searches the provider ran for the request
	// (Anthropic's usage.server_tool_use.web_search_requests), billed per
	// search on top of tokens (ledger.WebSearchFees).
	WebSearches int64
	// Seen is true once any usage figure was read from the upstream, so a
	// response that carried none is told apart from one that used zero.
	Seen bool
}

// TotalInput is every input token, cached or not.
func (u Usage) TotalInput() int64 {
	return u.InputTokens + u.CacheCreation5m + u.CacheCreation1h + u.CacheReadTokens
}

// CacheCreation is the cache-write total regardless of TTL.
func (u Usage) CacheCreation() int64 { return u.CacheCreation5m + u.CacheCreation1h }
