package ledger

import "strings"

// mtok is one USD per million tokens in picodollars per token.
const mtok = 1_000_000

type priceRow struct {
	provider, model string
	p               Prices
}

// Prompt-cache prices as multiples of a model's input price, as each
// provider publishes them:
//
//   - Anthropic, "Pricing" page of the Claude docs, section "Prompt
//     caching" (https://docs.claude.com/en/docs/about-claude/pricing):
//     5-minute cache writes 1.25x the base input price, 1-hour cache
//     writes 2x, cache hits and refreshes 0.1x. Claude on Amazon Bedrock
//     ("Amazon Bedrock pricing", https://aws.amazon.com/bedrock/pricing/)
//     and on Vertex AI ("Vertex AI generative AI pricing",
//     https://cloud.google.com/vertex-ai/generative-ai/pricing) lists cache
//     writes and reads at the same ratios.
//   - OpenAI, "Pricing" page of the API docs
//     (https://platform.openai.com/docs/pricing), column "Cached input":
//     caching is automatic and writes cost the normal input price; reads
//     are 0.5x for gpt-4o, gpt-4o-mini, o1 and o3-mini, 0.25x for gpt-4.1,
//     o3 and o4-mini, 0.1x for the gpt-5 family. The rows below carry the
//     published per-model price, which is that ratio.
//   - Google, "Gemini Developer API pricing"
//     (https://ai.google.dev/gemini-api/docs/pricing), "Context caching
//     price": cached tokens (cachedContentTokenCount) 0.1x the input price
//     for the 2.5 and 3 models; implicit caching writes nothing extra.
//     Explicit caches also bill storage per hour, which no answer reports
//     and the ledger does not count.
//   - DeepSeek ("Models & Pricing", cache hit 0.1x) and xAI ("Models and
//     Pricing", cached input 0.25x) likewise bill writes as input.
const (
	anthropicCacheReadNum, anthropicCacheReadDen       = 1, 10
	anthropicCacheWrite5mNum, anthropicCacheWrite5mDen = 5, 4
	anthropicCacheWrite1hNum, anthropicCacheWrite1hDen = 2, 1
)

// anthropicPrices derives the cache prices from the input price as
// Anthropic bills them (see the multipliers above).
func anthropicPrices(in, out int64) Prices {
	r, w5, w1 := anthropicCache(in)
	return Prices{Input: in, Output: out, CacheRead: r, CacheWrite5m: w5, CacheWrite1h: w1}
}

func anthropicCache(in int64) (read, write5m, write1h int64) {
	return in * anthropicCacheReadNum / anthropicCacheReadDen,
		in * anthropicCacheWrite5mNum / anthropicCacheWrite5mDen,
		in * anthropicCacheWrite1hNum / anthropicCacheWrite1hDen
}

// CachePricesFor derives the cache prices of a model from an input price
// that replaces its list price (model_info.input_cost_per_token): the
// built-in row's ratios when the model has one, else Anthropic's
// multipliers for Claude on any of its clouds. For any other model there
// is no published ratio to follow, and ok is false: its cache prices are
// what model_info says, else 0.
func CachePricesFor(provider, upstreamModel string, input int64) (read, write5m, write1h int64, ok bool) {
	if bp, found := BuiltinPrices(provider, upstreamModel); found && bp.Input > 0 {
		scale := func(v int64) int64 { return v * input / bp.Input }
		return scale(bp.CacheRead), scale(bp.CacheWrite5m), scale(bp.CacheWrite1h), true
	}
	if IsClaude(provider, upstreamModel) {
		r, w5, w1 := anthropicCache(input)
		return r, w5, w1, true
	}
	return 0, 0, 0, false
}

// IsClaude reports whether a deployment is Claude, billed with Anthropic's
// cache multipliers: Anthropic's API, or a Claude model on Bedrock or
// Vertex AI.
func IsClaude(provider, upstreamModel string) bool {
	switch strings.ToLower(provider) {
	case "anthropic":
		return true
	case "bedrock", "vertex_ai":
		return strings.Contains(strings.ToLower(upstreamModel), "claude")
	}
	return false
}

// cachedPrices is the shape of providers whose cache writes cost nothing
// extra and whose cache hits have their own price.
func cachedPrices(in, read, out int64) Prices {
	return Prices{Input: in, Output: out, CacheRead: read, CacheWrite5m: in, CacheWrite1h: in}
}

// BuiltinPrices returns the list price of a cloud model, matching the exact
// name first and then the longest known prefix, so dated snapshots
// (claude-sonnet-4-5-20250929, gpt-4o-2024-08-06) find their family. Local
// backends and unknown models report false: their cost is 0 unless the
// models file sets model_info prices.
//
// The rows are list prices for the standard tier and the 0-200k context
// window as published on the cited pages on the date given; they were
// written down from those pages, not fetched at run time. Check them when a
// provider changes prices.
func BuiltinPrices(provider, upstreamModel string) (Prices, bool) {
	rows := [...]priceRow{
		// Anthropic, https://docs.claude.com/en/docs/about-claude/pricing, 2025-11
		// (Opus 4.6 and Sonnet 4.6 from the same page, 2026-02). Claude on
		// Bedrock and Vertex AI is billed at these rates too; see cloudClaude.
		{"anthropic", "claude-opus-4-6", anthropicPrices(5*mtok, 25*mtok)},
		{"anthropic", "claude-sonnet-4-6", anthropicPrices(3*mtok, 15*mtok)},
		{"anthropic", "claude-opus-4-5", anthropicPrices(5*mtok, 25*mtok)},
		{"anthropic", "claude-opus-4-1", anthropicPrices(15*mtok, 75*mtok)},
		{"anthropic", "claude-opus-4", anthropicPrices(15*mtok, 75*mtok)},
		{"anthropic", "claude-sonnet-4-5", anthropicPrices(3*mtok, 15*mtok)},
		{"anthropic", "claude-sonnet-4", anthropicPrices(3*mtok, 15*mtok)},
		{"anthropic", "claude-3-7-sonnet", anthropicPrices(3*mtok, 15*mtok)},
		{"anthropic", "claude-3-5-sonnet", anthropicPrices(3*mtok, 15*mtok)},
		{"anthropic", "claude-haiku-4-5", anthropicPrices(1*mtok, 5*mtok)},
		{"anthropic", "claude-3-5-haiku", anthropicPrices(0.8*mtok, 4*mtok)},
		{"anthropic", "claude-3-opus", anthropicPrices(15*mtok, 75*mtok)},
		{"anthropic", "claude-3-haiku", anthropicPrices(0.25*mtok, 1.25*mtok)},

		// OpenAI, https://platform.openai.com/docs/pricing (Standard), 2025-11.
		{"openai", "gpt-5", cachedPrices(1.25*mtok, 0.125*mtok, 10*mtok)},
		{"openai", "gpt-5-mini", cachedPrices(0.25*mtok, 0.025*mtok, 2*mtok)},
		{"openai", "gpt-5-nano", cachedPrices(0.05*mtok, 0.005*mtok, 0.4*mtok)},
		{"openai", "gpt-4.1", cachedPrices(2*mtok, 0.5*mtok, 8*mtok)},
		{"openai", "gpt-4.1-mini", cachedPrices(0.4*mtok, 0.1*mtok, 1.6*mtok)},
		{"openai", "gpt-4.1-nano", cachedPrices(0.1*mtok, 0.025*mtok, 0.4*mtok)},
		{"openai", "gpt-4o", cachedPrices(2.5*mtok, 1.25*mtok, 10*mtok)},
		{"openai", "gpt-4o-mini", cachedPrices(0.15*mtok, 0.075*mtok, 0.6*mtok)},
		{"openai", "o1", cachedPrices(15*mtok, 7.5*mtok, 60*mtok)},
		{"openai", "o1-mini", cachedPrices(1.1*mtok, 0.55*mtok, 4.4*mtok)},
		{"openai", "o3", cachedPrices(2*mtok, 0.5*mtok, 8*mtok)},
		{"openai", "o3-mini", cachedPrices(1.1*mtok, 0.55*mtok, 4.4*mtok)},
		{"openai", "o4-mini", cachedPrices(1.1*mtok, 0.275*mtok, 4.4*mtok)},
		// Embeddings: input only.
		{"openai", "text-embedding-3-small", cachedPrices(0.02*mtok, 0.02*mtok, 0)},
		{"openai", "text-embedding-3-large", cachedPrices(0.13*mtok, 0.13*mtok, 0)},
		{"openai", "text-embedding-ada-002", cachedPrices(0.1*mtok, 0.1*mtok, 0)},

		// Groq, https://groq.com/pricing, 2025-11 (no prompt caching discount listed).
		{"groq", "llama-3.1-8b-instant", cachedPrices(0.05*mtok, 0.05*mtok, 0.08*mtok)},
		{"groq", "llama-3.3-70b-versatile", cachedPrices(0.59*mtok, 0.59*mtok, 0.79*mtok)},

		// Mistral, https://mistral.ai/pricing#api-pricing, 2025-11.
		{"mistral", "mistral-large", cachedPrices(2*mtok, 2*mtok, 6*mtok)},
		{"mistral", "mistral-small", cachedPrices(0.1*mtok, 0.1*mtok, 0.3*mtok)},
		{"mistral", "codestral", cachedPrices(0.3*mtok, 0.3*mtok, 0.9*mtok)},

		// DeepSeek, https://api-docs.deepseek.com/quick_start/pricing, 2025-11 (V3.2; hit = cache read).
		{"deepseek", "deepseek-chat", cachedPrices(0.28*mtok, 0.028*mtok, 0.42*mtok)},
		{"deepseek", "deepseek-reasoner", cachedPrices(0.28*mtok, 0.028*mtok, 0.42*mtok)},

		// xAI, https://docs.x.ai/docs/models, 2025-11.
		{"xai", "grok-4", cachedPrices(3*mtok, 0.75*mtok, 15*mtok)},
		{"xai", "grok-3-mini", cachedPrices(0.3*mtok, 0.075*mtok, 0.5*mtok)},

		// Google Gemini API, https://ai.google.dev/gemini-api/docs/pricing, 2025-11 (prompts <= 200k).
		{"gemini", "gemini-2.5-pro", cachedPrices(1.25*mtok, 0.125*mtok, 10*mtok)},
		{"gemini", "gemini-2.5-flash", cachedPrices(0.3*mtok, 0.03*mtok, 2.5*mtok)},
		{"gemini", "gemini-2.5-flash-lite", cachedPrices(0.1*mtok, 0.01*mtok, 0.4*mtok)},
		{"gemini", "gemini-embedding-001", cachedPrices(0.15*mtok, 0.15*mtok, 0)},
		// Same page, 2025-12: Gemini 3 previews (thoughts bill as output).
		{"gemini", "gemini-3-pro-preview", cachedPrices(2*mtok, 0.2*mtok, 12*mtok)},
		{"gemini", "gemini-3-flash-preview", cachedPrices(0.5*mtok, 0.05*mtok, 3*mtok)},
	}
	provider = strings.ToLower(provider)
	model := strings.ToLower(upstreamModel)
	if provider == "bedrock" || provider == "vertex_ai" {
		return cloudClaude(rows[:], provider, model)
	}
	// Some providers prefix names ("models/gemini-2.5-pro").
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	return lookup(rows[:], provider, model)
}

// lookup finds model among provider's rows: the exact name, else the
// longest known prefix.
func lookup(rows []priceRow, provider, model string) (Prices, bool) {
	best := -1
	for i := range rows {
		r := &rows[i]
		if r.provider != provider {
			continue
		}
		if r.model == model {
			return r.p, true
		}
		if strings.HasPrefix(model, r.model) && isNameBoundary(model[len(r.model)]) &&
			(best < 0 || len(r.model) > len(rows[best].model)) {
			best = i
		}
	}
	if best < 0 {
		return Prices{}, false
	}
	return rows[best].p, true
}

// isNameBoundary keeps "o3" from matching "o3x" while letting "gpt-4o"
// match "gpt-4o-2024-08-06" and "mistral-large" match "mistral-large-latest".
func isNameBoundary(c byte) bool {
	return c == '-' || c == '@' || c == ':' || c == '.'
}

// cloudClaude prices Claude on Bedrock and Vertex AI, which list the same
// per-token rates as Anthropic's own API for their global endpoints
// (https://aws.amazon.com/bedrock/pricing/, https://cloud.google.com/vertex-ai/generative-ai/pricing,
// 2025-11). Bedrock ids carry a vendor prefix and, for cross-region
// inference profiles, a geography ("us.anthropic.claude-sonnet-4-5-…:0",
// possibly inside an ARN); Vertex names a version after '@'.
//
// Bedrock's geographic profiles (us., eu., jp., …) and in-region calls of
// the models from Sonnet 4.5 on cost 10% more than its global. profiles
// (the same pricing pages); Vertex's regional endpoints do too, which
// WithRegionalPremium applies where the location is known.
func cloudClaude(rows []priceRow, provider, model string) (Prices, bool) {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	regional := false
	if provider == "bedrock" {
		geo, name, ok := strings.Cut(model, "anthropic.")
		if !ok {
			return Prices{}, false
		}
		model, regional = name, geo != "global."
	}
	p, ok := lookup(rows, "anthropic", model)
	if ok && regional && HasRegionalPremium(model) {
		p = WithRegionalPremium(p)
	}
	return p, ok
}

// HasRegionalPremium reports whether a Claude model costs more on a cloud's
// regional endpoint than on its global one: the models from Claude Sonnet
// 4.5 on.
func HasRegionalPremium(model string) bool {
	model = strings.ToLower(model)
	for _, m := range [...]string{"claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5", "claude-opus-4-6", "claude-sonnet-4-6"} {
		if model == m || (strings.HasPrefix(model, m) && isNameBoundary(model[len(m)])) {
			return true
		}
	}
	return false
}

// WithRegionalPremium is p with the regional endpoints' 10% added.
func WithRegionalPremium(p Prices) Prices {
	up := func(v int64) int64 { return v + v/10 }
	return Prices{Input: up(p.Input), Output: up(p.Output), CacheRead: up(p.CacheRead), CacheWrite5m: up(p.CacheWrite5m), CacheWrite1h: up(p.CacheWrite1h)}
}
