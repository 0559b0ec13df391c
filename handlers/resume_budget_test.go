package handlers

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// A stream cut after its client got 400 bytes of text, continued on the
// fallback, under a budget: the cut part is charged for what the client
// read (not message_start's output_tokens 1), it counts within the
// request's reservation at once (the budget's spend is both parts'), and
// the continuation is sent the output bound the reservation still pays
// for, so the two parts together stay within what was reserved.
func TestResumedStreamCountedWithinItsReservation(t *testing.T) {
	price := "    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00001\n"
	yaml, rest := fallbackPair(t, wordPieces(), "the end.", price)
	budgets := policy.NewBudgets(nil, nil)
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) { o.Budgets = budgets })
	id := &policy.Identity{KeyID: "cut", Role: policy.RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(500), BudgetPeriod: "monthly"}}
	w := post(g, id, "/v1/messages", `{"model":"a","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "Anthropic-Version", "2023-06-01")
	if w.Code != 200 || !strings.Contains(w.Body.String(), "the end.") {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	cutRec, restRec := cutAndRest(t, obs)
	if cutRec.OutputTokens < 100 {
		t.Errorf("the cut part is charged %d output tokens; its client read 400 bytes (100 tokens)", cutRec.OutputTokens)
	}
	st := budgets.Status(id, ledger.Limits{}, "")
	if want := ledger.ShortCents(cutRec.CostPicoUSD + restRec.CostPicoUSD); len(st) != 1 || st[0].Spent != want {
		t.Errorf("budget status %+v, want spent %s (both parts)", st, want)
	}
	// The part is settled on its own record, under a ticket of its own,
	// so the writer's report of either record ends only its own count
	// (policy.TestCutPartCountedOnce).
	if cutRec.Ticket == 0 || cutRec.Ticket == restRec.Ticket {
		t.Errorf("the cut part's record has ticket %d, the rest's %d; want one of its own", cutRec.Ticket, restRec.Ticket)
	}
	reqs := rest.requests()
	if len(reqs) != 1 {
		t.Fatalf("continuation requests %d", len(reqs))
	}
	m := regexp.MustCompile(`"max_tokens":(\d+)`).FindStringSubmatch(reqs[0])
	if m == nil {
		t.Fatalf("continuation without max_tokens: %s", reqs[0])
	}
	bound, _ := strconv.ParseInt(m[1], 10, 64)
	// The reservation is the worst case of 1000 tokens; the part took
	// what it cost of it (its 10 input and 100 output tokens), the
	// continuation's own input is counted again.
	if bound >= 1000-100 || bound < 800 {
		t.Errorf("the continuation was sent max_tokens %d; want 1000 less what the cut part cost", bound)
	}
}
