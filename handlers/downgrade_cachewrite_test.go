package handlers

import (
	"context"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// max_price bounds an input token however it is billed: a deployment
// whose prompt-cache write (5m or 1h) is dearer than the bound's input
// breaks the bound at config and API time (DowngradeTarget) and at the
// request (a limit stored before: refused, not downgraded), and a Claude
// model priced exactly at the bound breaks it with its 1h write (2×).
func TestDowngradeBoundHoldsCacheWrites(t *testing.T) {
	url, served := modelCounter(t, `{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55}`)
	// $10 in, $20 out per million, but $500 per million to write the cache.
	cachey := "    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00002\n      cache_creation_input_token_cost: 0.0005\n"
	// Exactly the bound; its 1h write is $20 per million.
	claude := "    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00002\n"
	yaml := "model_list:\n" + kindEntry("paid", "openai/paid-up", url) +
		"    model_info:\n      input_cost_per_token: 0.0005\n      output_cost_per_token: 0.001\n" +
		kindEntry("cachey", "anthropic/claude-haiku-4-5", url) + cachey +
		kindEntry("claude", "anthropic/claude-haiku-4-5", url) + claude
	g, _, st, budgets := budgetedGateway(t, yaml)
	bound := ledger.DowngradeBound{MaxInputPico: 10_000_000, MaxOutputPico: 20_000_000, AllowanceCents: 100}
	for alias, want := range map[string]string{
		"cachey": `costs $10 input ($500 to write the prompt cache), $20 output`,
		"claude": `costs $10 input ($20 to write the prompt cache), $20 output`,
	} {
		if known, why := g.DowngradeTarget(alias, bound); !known || !strings.Contains(why, want) {
			t.Errorf("DowngradeTarget(%s) = %v %q, want %q", alias, known, why, want)
		}
	}
	if _, why := g.DowngradeTarget("claude", ledger.DowngradeBound{MaxInputPico: 20_000_000, MaxOutputPico: 20_000_000, AllowanceCents: 100}); why != "" {
		t.Errorf("claude under a bound its 1h write is within: %q", why)
	}

	putUserLimit(t, st, "dee@example.com", 0, "cachey", bound)
	if err := budgets.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	dee := &policy.Identity{KeyID: "apikey_dee", Owner: "dee@example.com", Role: policy.RoleUser, Runtime: true}
	req := `{"model":"paid","max_tokens":10,"messages":[{"role":"user","content":"hello"}]}`
	if rr := post(g, dee, "/v1/chat/completions", req); rr.Code != 429 || rr.Header().Get(HeaderDowngradedFrom) != "" {
		t.Errorf("dee past her cap, downgrade to a chain whose cache write breaks the bound: %d %s", rr.Code, rr.Body)
	}
	if n := served(); len(n) != 0 {
		t.Errorf("upstream calls %v; want none", n)
	}
}

// Past the cap, a request for the downgrade's alias itself is served
// within the allowance as the requests sent there are, not refused
// (hostile8 H3): Claude Code asks for its background model by name.
func TestDowngradeAliasAskedForDirectlyPastTheCap(t *testing.T) {
	url, served := modelCounter(t, `{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55}`)
	priced := func(in, out string) string {
		return "    model_info:\n      input_cost_per_token: " + in + "\n      output_cost_per_token: " + out + "\n"
	}
	yaml := "model_list:\n" + kindEntry("paid", "openai/paid-up", url) + priced("0.0005", "0.001") +
		kindEntry("cheap", "openai/cheap-up", url) + priced("0.00001", "0.00002")
	g, _, st, budgets := budgetedGateway(t, yaml)
	putUserLimit(t, st, "eve@example.com", 0, "cheap", ledger.DowngradeBound{MaxInputPico: 10_000_000, MaxOutputPico: 20_000_000, AllowanceCents: 1})
	if err := budgets.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	eve := &policy.Identity{KeyID: "apikey_eve", Owner: "eve@example.com", Role: policy.RoleUser, Runtime: true}
	req := `{"model":"cheap","max_tokens":10,"messages":[{"role":"user","content":"hello"}]}`
	rr := post(g, eve, "/v1/chat/completions", req)
	if rr.Code != 200 || rr.Header().Get(HeaderDowngradedFrom) != "" {
		t.Fatalf("eve asking for cheap past her cap: %d %q %s", rr.Code, rr.Header().Get(HeaderDowngradedFrom), rr.Body)
	}
	// Each costs $0.0006 of the 1-cent allowance: refused past it.
	refused := false
	for range 50 {
		if rr := post(g, eve, "/v1/chat/completions", req); rr.Code == 429 {
			refused = strings.Contains(rr.Body.String(), "past it that requests downgraded to cheap may spend")
			break
		}
	}
	if !refused {
		t.Error("eve's requests for cheap were never refused past the allowance, or the refusal did not name it")
	}
	if n := served(); n["paid-up"] != 0 || n["cheap-up"] == 0 || n["cheap-up"] > 17 {
		t.Errorf("upstream calls %v", n)
	}
}
