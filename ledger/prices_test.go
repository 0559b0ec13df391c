package ledger

import "testing"

func TestBuiltinPrices(t *testing.T) {
	tests := []struct {
		provider, model string
		want            Prices
		ok              bool
	}{
		{"anthropic", "claude-sonnet-4-5", Prices{Input: 3_000_000, Output: 15_000_000, CacheRead: 300_000,
			CacheWrite5m: 3_750_000, CacheWrite1h: 6_000_000}, true},
		{"anthropic", "claude-sonnet-4-5-20250929", Prices{Input: 3_000_000, Output: 15_000_000, CacheRead: 300_000,
			CacheWrite5m: 3_750_000, CacheWrite1h: 6_000_000}, true},
		{"anthropic", "claude-opus-4-1-20250805", Prices{Input: 15_000_000, Output: 75_000_000, CacheRead: 1_500_000,
			CacheWrite5m: 18_750_000, CacheWrite1h: 30_000_000}, true},
		{"anthropic", "claude-opus-4-5-20251101", Prices{Input: 5_000_000, Output: 25_000_000, CacheRead: 500_000,
			CacheWrite5m: 6_250_000, CacheWrite1h: 10_000_000}, true},
		{"Anthropic", "claude-3-5-haiku-latest", Prices{Input: 800_000, Output: 4_000_000, CacheRead: 80_000,
			CacheWrite5m: 1_000_000, CacheWrite1h: 1_600_000}, true},
		{"anthropic", "claude-haiku-4-5@20251001", Prices{Input: 1_000_000, Output: 5_000_000, CacheRead: 100_000,
			CacheWrite5m: 1_250_000, CacheWrite1h: 2_000_000}, true},
		// Longest prefix: gpt-4o-mini, not gpt-4o.
		{"openai", "gpt-4o-mini-2024-07-18", Prices{Input: 150_000, Output: 600_000, CacheRead: 75_000,
			CacheWrite5m: 150_000, CacheWrite1h: 150_000}, true},
		{"openai", "gpt-4o-2024-08-06", Prices{Input: 2_500_000, Output: 10_000_000, CacheRead: 1_250_000,
			CacheWrite5m: 2_500_000, CacheWrite1h: 2_500_000}, true},
		{"openai", "o4-mini", Prices{Input: 1_100_000, Output: 4_400_000, CacheRead: 275_000,
			CacheWrite5m: 1_100_000, CacheWrite1h: 1_100_000}, true},
		{"gemini", "models/gemini-2.5-flash-lite", Prices{Input: 100_000, Output: 400_000, CacheRead: 10_000,
			CacheWrite5m: 100_000, CacheWrite1h: 100_000}, true},
		{"mistral", "mistral-large-latest", Prices{Input: 2_000_000, Output: 6_000_000, CacheRead: 2_000_000,
			CacheWrite5m: 2_000_000, CacheWrite1h: 2_000_000}, true},
		{"openai", "o3x", Prices{}, false},                 // a prefix must end at a name boundary
		{"openai", "qwen2.5-coder", Prices{}, false},       // a local model on an OpenAI-compatible server
		{"ollama", "llama3.1", Prices{}, false},            // local
		{"openai", "claude-sonnet-4-5", Prices{}, false},   // the provider must match
		{"anthropic", "claude-unknown-9", Prices{}, false}, // no family
	}
	for _, tt := range tests {
		got, ok := BuiltinPrices(tt.provider, tt.model)
		if ok != tt.ok || got != tt.want {
			t.Errorf("BuiltinPrices(%q, %q) = %+v, %v; want %+v, %v", tt.provider, tt.model, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPricesCostAndApply(t *testing.T) {
	p, _ := BuiltinPrices("anthropic", "claude-sonnet-4-5")
	r := Record{InputTokens: 1000, CacheCreation5m: 200, CacheCreation1h: 100, CacheReadTokens: 5000, OutputTokens: 300}
	// 1000*3e6 + 200*3.75e6 + 100*6e6 + 5000*0.3e6 + 300*15e6
	const want = 3_000_000_000 + 750_000_000 + 600_000_000 + 1_500_000_000 + 4_500_000_000
	if got := p.Cost(&r); got != want {
		t.Fatalf("Cost = %d, want %d", got, want)
	}
	p.Apply(&r)
	if r.CostPicoUSD != want || r.Prices != p {
		t.Fatalf("Apply: cost %d prices %+v", r.CostPicoUSD, r.Prices)
	}
	if (Prices{}).Cost(&r) != 0 || !(Prices{}).IsZero() || p.IsZero() {
		t.Fatal("zero prices must cost nothing")
	}
}

func TestContextWindowFor(t *testing.T) {
	for total, want := range map[int64]string{0: "0-200k", 200_000: "0-200k", 200_001: "200k-1M", 1_000_000: "200k-1M"} {
		if got := ContextWindowFor(total); got != want {
			t.Errorf("ContextWindowFor(%d) = %q, want %q", total, got, want)
		}
	}
}

func TestCloudClaudePrices(t *testing.T) {
	sonnet := anthropicPrices(3*mtok, 15*mtok)
	premium := Prices{Input: 3_300_000, Output: 16_500_000, CacheRead: 330_000, CacheWrite5m: 4_125_000, CacheWrite1h: 6_600_000}
	tests := []struct {
		provider, model string
		want            Prices
		ok              bool
	}{
		{"bedrock", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet, true},
		{"bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", premium, true},
		{"bedrock", "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-5-20250929-v1:0", premium, true},
		// Older models have one price everywhere.
		{"bedrock", "anthropic.claude-3-haiku-20240307-v1:0", anthropicPrices(0.25*mtok, 1.25*mtok), true},
		{"bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0", sonnet, true},
		{"bedrock", "meta.llama3-70b-instruct-v1:0", Prices{}, false},
		{"vertex_ai", "claude-sonnet-4-5@20250929", sonnet, true},
		{"vertex_ai", "claude-opus-4-6", anthropicPrices(5*mtok, 25*mtok), true},
		{"vertex_ai", "gemini-2.5-pro", Prices{}, false},
	}
	for _, tt := range tests {
		got, ok := BuiltinPrices(tt.provider, tt.model)
		if ok != tt.ok || got != tt.want {
			t.Errorf("BuiltinPrices(%q, %q) = %+v, %v; want %+v, %v", tt.provider, tt.model, got, ok, tt.want, tt.ok)
		}
	}
	if !HasRegionalPremium("claude-haiku-4-5@20251001") || HasRegionalPremium("claude-sonnet-4@20250514") {
		t.Error("HasRegionalPremium")
	}
	if got := WithRegionalPremium(sonnet); got != premium {
		t.Errorf("WithRegionalPremium = %+v", got)
	}
}
