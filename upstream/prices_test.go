package upstream

import (
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
)

// model_info prices: an input price alone brings the provider's cache
// ratios; explicit cache prices win; only Claude has a separate 1-hour
// write price.
func TestPricesForModelInfo(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	tests := []struct {
		name string
		d    modellist.Deployment
		want ledger.Prices
	}{
		{"claude at a negotiated input price",
			modellist.Deployment{Provider: "anthropic", Model: "claude-sonnet-4-5", Info: modellist.ModelInfo{InputCostPerToken: p(2_000_000)}},
			ledger.Prices{Input: 2_000_000, Output: 15_000_000, CacheRead: 200_000, CacheWrite5m: 2_500_000, CacheWrite1h: 4_000_000}},
		{"claude with its 5-minute write price given",
			modellist.Deployment{Provider: "anthropic", Model: "claude-sonnet-4-5", Info: modellist.ModelInfo{CacheCreationInputTokenCost: p(3_000_000)}},
			ledger.Prices{Input: 3_000_000, Output: 15_000_000, CacheRead: 300_000, CacheWrite5m: 3_000_000, CacheWrite1h: 6_000_000}},
		{"claude with both write prices given",
			modellist.Deployment{Provider: "bedrock", Model: "anthropic.claude-future-v1:0", Info: modellist.ModelInfo{InputCostPerToken: p(1_000_000),
				CacheCreationInputTokenCost: p(1_300_000), CacheCreation1hInputTokenCost: p(2_100_000)}},
			ledger.Prices{Input: 1_000_000, CacheRead: 100_000, CacheWrite5m: 1_300_000, CacheWrite1h: 2_100_000}},
		{"a local server priced by input only has no cache prices but its own",
			modellist.Deployment{Provider: "openai", Model: "qwen3", Local: true, Info: modellist.ModelInfo{InputCostPerToken: p(500_000), OutputCostPerToken: p(1_000_000),
				CacheReadInputTokenCost: p(50_000)}},
			ledger.Prices{Input: 500_000, Output: 1_000_000, CacheRead: 50_000}},
		{"a local server with a cache write price has one write price",
			modellist.Deployment{Provider: "openai", Model: "qwen3", Local: true, Info: modellist.ModelInfo{CacheCreationInputTokenCost: p(700_000)}},
			ledger.Prices{CacheWrite5m: 700_000, CacheWrite1h: 700_000}},
		{"a local server without prices costs nothing",
			modellist.Deployment{Provider: "ollama", Model: "llama3", Local: true}, ledger.Prices{}},
	}
	for _, tt := range tests {
		if got := pricesFor(&tt.d); got != tt.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}
