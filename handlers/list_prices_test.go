package handlers

import (
	"testing"

	"github.com/modelgate/modelgate/ledger"
)

// ListPrices bounds an agent-reported cost: the alias's prices (through
// model_aliases too), the dearest of all for a model the file does not
// know (hostile review N5).
func TestListPrices(t *testing.T) {
	price := func(in, out string) string {
		return "    model_info:\n      input_cost_per_token: " + in + "\n      output_cost_per_token: " + out + "\n"
	}
	yaml := "model_list:\n" + kindEntry("cheap", "openai/c", "http://127.0.0.1:1") + price("0.000001", "0.000009") +
		kindEntry("dear", "openai/d", "http://127.0.0.1:1") + price("0.000003", "0.000005") +
		"model_aliases:\n  \"claude-sonnet-*\": cheap\n"
	g, _ := testGateway(t, yaml, nil)
	for model, want := range map[string]ledger.Prices{
		"cheap":             {Input: 1_000_000, Output: 9_000_000},
		"claude-sonnet-4-5": {Input: 1_000_000, Output: 9_000_000},
		"dear":              {Input: 3_000_000, Output: 5_000_000},
		"made-up-model":     {Input: 3_000_000, Output: 9_000_000},
	} {
		if got := g.ListPrices(model); got != want {
			t.Errorf("ListPrices(%q) = %+v, want %+v", model, got, want)
		}
	}
}
