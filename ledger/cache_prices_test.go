package ledger

import "testing"

// TestCacheMultipliers holds every built-in row to the cache multipliers
// its provider publishes (see the comment above anthropicPrices): Claude
// writes 1.25x (5 m) and 2x (1 h), reads 0.1x, on Anthropic, Bedrock and
// Vertex AI; OpenAI, Gemini, DeepSeek and xAI write at the input price and
// read at their model's published discount.
func TestCacheMultipliers(t *testing.T) {
	// ratio is num/den of the input price.
	type ratio struct{ num, den int64 }
	check := func(name string, got, input int64, r ratio) {
		t.Helper()
		if got*r.den != input*r.num {
			t.Errorf("%s: %d is not %d/%d of the input price %d", name, got, r.num, r.den, input)
		}
	}
	claude := []string{"claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-5", "claude-opus-4-1", "claude-sonnet-4-5",
		"claude-sonnet-4", "claude-3-7-sonnet", "claude-haiku-4-5", "claude-3-5-haiku", "claude-3-opus", "claude-3-haiku"}
	for _, m := range claude {
		for _, pm := range [][2]string{{"anthropic", m}, {"bedrock", "global.anthropic." + m + "-v1:0"}, {"vertex_ai", m + "@20250101"}} {
			p, ok := BuiltinPrices(pm[0], pm[1])
			if !ok {
				t.Fatalf("%s/%s: no price", pm[0], pm[1])
			}
			name := pm[0] + "/" + pm[1]
			check(name+" cache read", p.CacheRead, p.Input, ratio{1, 10})
			check(name+" 5m write", p.CacheWrite5m, p.Input, ratio{5, 4})
			check(name+" 1h write", p.CacheWrite1h, p.Input, ratio{2, 1})
		}
	}
	// Per-model cached-input discounts from each provider's pricing page.
	reads := []struct {
		provider, model string
		r               ratio
	}{
		{"openai", "gpt-5", ratio{1, 10}}, {"openai", "gpt-5-mini", ratio{1, 10}}, {"openai", "gpt-5-nano", ratio{1, 10}},
		{"openai", "gpt-4.1", ratio{1, 4}}, {"openai", "gpt-4.1-mini", ratio{1, 4}}, {"openai", "gpt-4.1-nano", ratio{1, 4}},
		{"openai", "o3", ratio{1, 4}}, {"openai", "o4-mini", ratio{1, 4}},
		{"openai", "gpt-4o", ratio{1, 2}}, {"openai", "gpt-4o-mini", ratio{1, 2}}, {"openai", "o1", ratio{1, 2}},
		{"openai", "o1-mini", ratio{1, 2}}, {"openai", "o3-mini", ratio{1, 2}},
		{"gemini", "gemini-2.5-pro", ratio{1, 10}}, {"gemini", "gemini-2.5-flash", ratio{1, 10}},
		{"gemini", "gemini-2.5-flash-lite", ratio{1, 10}}, {"gemini", "gemini-3-pro-preview", ratio{1, 10}},
		{"gemini", "gemini-3-flash-preview", ratio{1, 10}},
		{"deepseek", "deepseek-chat", ratio{1, 10}}, {"xai", "grok-4", ratio{1, 4}}, {"xai", "grok-3-mini", ratio{1, 4}},
	}
	for _, c := range reads {
		p, ok := BuiltinPrices(c.provider, c.model)
		if !ok {
			t.Fatalf("%s/%s: no price", c.provider, c.model)
		}
		name := c.provider + "/" + c.model
		check(name+" cache read", p.CacheRead, p.Input, c.r)
		check(name+" write", p.CacheWrite5m, p.Input, ratio{1, 1})
		check(name+" 1h write", p.CacheWrite1h, p.Input, ratio{1, 1})
	}
}

// TestCachePricesFor: an input price that replaces the list price brings
// cache prices in the provider's proportions.
func TestCachePricesFor(t *testing.T) {
	tests := []struct {
		provider, model string
		input           int64
		read, w5, w1    int64
	}{
		// A listed model keeps its row's ratios (gpt-4.1 reads at 1/4).
		{"openai", "gpt-4.1-2025-04-14", 1_000_000, 250_000, 1_000_000, 1_000_000},
		// A listed Claude at a negotiated rate.
		{"anthropic", "claude-sonnet-4-5", 2_000_000, 200_000, 2_500_000, 4_000_000},
		// An unlisted Claude on any of its clouds: Anthropic's multipliers.
		{"anthropic", "claude-future-9", 4_000_000, 400_000, 5_000_000, 8_000_000},
		{"bedrock", "us.anthropic.claude-future-9-v1:0", 4_000_000, 400_000, 5_000_000, 8_000_000},
	}
	for _, tt := range tests {
		r, w5, w1, ok := CachePricesFor(tt.provider, tt.model, tt.input)
		if !ok || r != tt.read || w5 != tt.w5 || w1 != tt.w1 {
			t.Errorf("%s/%s at %d: read %d, 5m %d, 1h %d (%v); want %d, %d, %d", tt.provider, tt.model, tt.input, r, w5, w1, ok, tt.read, tt.w5, tt.w1)
		}
	}
	// Anything else unlisted has no ratio to follow.
	if _, _, _, ok := CachePricesFor("openai", "qwen3-coder", 700_000); ok {
		t.Errorf("an unlisted model got derived cache prices")
	}
}

func TestCacheReadShare(t *testing.T) {
	tests := []struct {
		uncached, writes, read int64
		want                   float64
	}{
		{0, 0, 0, 0},
		{100, 0, 0, 0},
		{100, 900, 0, 0},
		{100, 0, 900, 0.9},
		{1, 1, 1, 0.3333},
		{0, 0, 5, 1},
		{MaxTokens, MaxTokens, MaxTokens, 0.3333},
	}
	for _, tt := range tests {
		if got := CacheReadShare(tt.uncached, tt.writes, tt.read); got != tt.want {
			t.Errorf("CacheReadShare(%d, %d, %d) = %v, want %v", tt.uncached, tt.writes, tt.read, got, tt.want)
		}
	}
}
