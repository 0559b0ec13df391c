package handlers

import (
	"context"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// A request carrying content by reference (an image URL: a few bytes
// billed thousands of tokens) reserves its input at the chain's context
// window, under a plain budget and past a cap with a priced downgrade
// alike, so neither budget can be overshot by what the bytes hide; and a
// downgraded request asking for a server tool billed per use is refused.
func TestReferencedContentReservesTheContextWindow(t *testing.T) {
	url, served := modelCounter(t, `{"prompt_tokens":100000,"completion_tokens":5,"total_tokens":100005}`)
	// $10 and $20 per million tokens; a 200k-token context window.
	priced := "    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00002\n      max_input_tokens: 200000\n"
	yaml := "model_list:\n" + kindEntry("paid", "openai/paid-up", url) + priced +
		kindEntry("cheap", "openai/cheap-up", url) + priced
	g, obs, st, budgets := budgetedGateway(t, yaml)
	// A $1 cap refusing, and a 1-cent cap going to cheap with 2 cents past it.
	putUserLimit(t, st, "ann@example.com", 100, "", ledger.DowngradeBound{})
	putUserLimit(t, st, "bob@example.com", 1, "cheap", ledger.DowngradeBound{MaxInputPico: 10_000_000, MaxOutputPico: 20_000_000, AllowanceCents: 2})
	if err := budgets.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	ann := &policy.Identity{KeyID: "apikey_ann", Owner: "ann@example.com", Role: policy.RoleUser, Runtime: true}
	bob := &policy.Identity{KeyID: "apikey_bob", Owner: "bob@example.com", Role: policy.RoleUser, Runtime: true}
	text := `{"model":"paid","max_tokens":10,"messages":[{"role":"user","content":"hello"}]}`
	image := `{"model":"paid","max_tokens":10,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/big.png"}}]}]}`
	search := `{"model":"paid","max_tokens":10,"web_search_options":{},"messages":[{"role":"user","content":"hello"}]}`

	// 200k tokens at $10 per million is $2: past ann's $1.
	if rr := post(g, ann, "/v1/chat/completions", image); rr.Code != 429 {
		t.Errorf("an image by URL under a $1 budget: %d %s; want 429 (its input reserved at the context window)", rr.Code, rr.Body)
	}
	if rr := post(g, ann, "/v1/chat/completions", text); rr.Code != 200 {
		t.Errorf("text under a $1 budget: %d %s", rr.Code, rr.Body)
	}
	// Bob is past his 1-cent cap at once (the upstream bills 100k tokens:
	// $1); the image's window is past the 2-cent allowance too.
	if rr := post(g, bob, "/v1/chat/completions", text); rr.Code != 200 {
		t.Fatalf("bob's first request: %d %s", rr.Code, rr.Body)
	}
	for _, req := range []string{image, text} {
		if rr := post(g, bob, "/v1/chat/completions", req); rr.Code != 429 {
			t.Errorf("bob past cap and allowance: %d %s", rr.Code, rr.Body)
		}
	}
	var spent int64
	for _, r := range obs.Records() {
		if r.KeyID == "apikey_bob" {
			spent += r.CostPicoUSD
		}
	}
	if n := served(); n["paid-up"] != 2 || n["cheap-up"] != 0 {
		t.Errorf("upstream calls %v; want ann's text and bob's first on paid only", n)
	}
	if spent > 1e12+1e10 {
		t.Errorf("bob spent %d pico", spent)
	}

	// A fresh person past a 0 cap: the downgrade takes text, refuses a
	// server tool billed per use.
	putUserLimit(t, st, "cy@example.com", 0, "cheap", ledger.DowngradeBound{MaxInputPico: 10_000_000, MaxOutputPico: 20_000_000, AllowanceCents: 100})
	if err := budgets.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	cy := &policy.Identity{KeyID: "apikey_cy", Owner: "cy@example.com", Role: policy.RoleUser, Runtime: true}
	if rr := post(g, cy, "/v1/chat/completions", search); rr.Code != 429 || !strings.Contains(rr.Body.String(), "server-side tools billed per use (web_search_options)") {
		t.Errorf("a downgraded request with web search: %d %s", rr.Code, rr.Body)
	}
	if rr := post(g, cy, "/v1/chat/completions", text); rr.Code != 200 || rr.Header().Get(HeaderDowngradedFrom) != "paid" {
		t.Errorf("a downgraded text request: %d %s", rr.Code, rr.Body)
	}
}
