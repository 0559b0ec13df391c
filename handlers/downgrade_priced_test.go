package handlers

import (
	"context"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// Past a person's cap with `at_cap downgrade cheap` under a price bound
// and an allowance, requests for the paid alias go to the priced one, are
// charged, and stop once the cap plus the allowance is spent; the paid
// upstream is never called, the cheap one only within the allowance. A
// bound a chain's pricier fallback breaks is refused at config time
// (DowngradeTarget) and at the request (no paid fallback past a cap).
func TestDowngradeToAPricedAliasWithinItsAllowance(t *testing.T) {
	url, served := modelCounter(t, `{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55}`)
	// $500 and $10 per million tokens in; $1,000 and $20 out.
	paid := "    model_info:\n      input_cost_per_token: 0.0005\n      output_cost_per_token: 0.001\n"
	cheap := "    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00002\n"
	yaml := "model_list:\n" + kindEntry("paid", "openai/paid-up", url) + paid +
		kindEntry("cheap", "openai/cheap-up", url) + cheap +
		kindEntry("cheapleaky", "openai/cheap-up", url) + cheap +
		kindEntry("unpriced", "openai/gpt-unknown-model", url) +
		"router_settings:\n  fallbacks:\n    - cheapleaky: [paid]\n"
	g, obs, st, budgets := budgetedGateway(t, yaml)

	bound := ledger.DowngradeBound{MaxInputPico: 10_000_000, MaxOutputPico: 20_000_000, AllowanceCents: 2}
	for _, c := range []struct {
		alias string
		bound ledger.DowngradeBound
		want  string
	}{
		{"cheap", bound, ""},
		{"cheap", ledger.DowngradeBound{}, `"cheap" is not free`},
		{"cheap", ledger.DowngradeBound{MaxInputPico: 9_000_000, MaxOutputPico: 20_000_000, AllowanceCents: 2}, `"cheap" is dearer than the bound`},
		{"cheapleaky", bound, `alias "paid": openai/paid-up costs $500 input, $1000 output`},
		{"unpriced", bound, `has no price`},
	} {
		if known, why := g.DowngradeTarget(c.alias, c.bound); !known || (c.want == "") != (why == "") || !strings.Contains(why, c.want) {
			t.Errorf("DowngradeTarget(%s, %+v) = %v %q, want %q", c.alias, c.bound, known, why, c.want)
		}
	}

	set := func(person, to string, b ledger.DowngradeBound) { putUserLimit(t, st, person, 1, to, b) }
	set("erin@example.com", "cheap", bound)
	// Stored before the check, or by another gateway's models file: the
	// request still never reaches the paid fallback.
	set("frank@example.com", "cheapleaky", bound)
	if err := budgets.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := `{"model":"paid","max_tokens":10,"messages":[{"role":"user","content":"hello there"}]}`
	erin := &policy.Identity{KeyID: "apikey_erin", Owner: "erin@example.com", Role: policy.RoleUser, Runtime: true}
	// Each cheap request costs 50 × $0.00001 + 5 × $0.00002 = $0.0006;
	// its worst case (input a token a byte, 10 output tokens) is more.
	// The paid model's worst case is past the $0.01 cap at once.
	var downgraded, refused int
	for range 200 {
		rr := post(g, erin, "/v1/chat/completions", req)
		if rr.Code == 429 {
			refused++
			if !strings.Contains(rr.Body.String(), "past it that requests downgraded to cheap may spend") {
				t.Errorf("the refusal past the allowance: %s", rr.Body)
			}
			break
		}
		if rr.Code != 200 || rr.Header().Get(HeaderDowngradedFrom) != "paid" {
			t.Fatalf("erin past her cap: %d %q %s", rr.Code, rr.Header().Get(HeaderDowngradedFrom), rr.Body)
		}
		downgraded++
	}
	if refused == 0 || downgraded == 0 {
		t.Fatalf("%d downgraded, %d refused: want some, then a refusal", downgraded, refused)
	}
	var spent int64
	for _, r := range obs.Records() {
		if r.KeyID != "apikey_erin" || r.Status != 200 {
			continue
		}
		if r.Alias != "cheap" || r.DowngradedFrom != "paid" || r.CostPicoUSD != 600_000_000 {
			t.Errorf("erin's record: alias %s from %q cost %d", r.Alias, r.DowngradedFrom, r.CostPicoUSD)
		}
		spent += r.CostPicoUSD
	}
	if limit := int64(1+2) * 1e10; spent > limit || spent < limit/2 {
		t.Errorf("erin spent %d pico past a $0.01 cap with a $0.02 allowance; want most of it, never more", spent)
	}
	frank := &policy.Identity{KeyID: "apikey_frank", Owner: "frank@example.com", Role: policy.RoleUser, Runtime: true}
	if rr := post(g, frank, "/v1/chat/completions", req); rr.Code != 429 {
		t.Errorf("frank's downgrade whose chain falls back to the paid model: %d %s", rr.Code, rr.Body)
	}
	if n := served(); n["paid-up"] != 0 || n["cheap-up"] != downgraded {
		t.Errorf("upstream calls %v; want %d to the cheap model only", n, downgraded)
	}
}
