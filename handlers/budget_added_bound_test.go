package handlers

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// unboundedAnswer is what the fake upstream writes when it is sent no
// output bound: a million tokens, $10 at $0.00001 a token.
const unboundedAnswer = 1_000_000

// longUpstream starts a boundUpstream that answers a request without a
// bound with unboundedAnswer tokens, behind the alias "paid" (priced as
// paidUpstream's) with the model_info lines extra.
func longUpstream(t *testing.T, extra string) (*boundUpstream, string) {
	up := &boundUpstream{unbounded: unboundedAnswer}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	return up, "model_list:\n" + kindEntry("paid", "openai/fake-paid", srv.URL) +
		"    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00001\n" + extra
}

// unboundedRequests send no output bound, in each client format: chat
// passed through, Responses, Gemini and Converse translated to the chat
// upstream.
var unboundedRequests = []struct{ name, path, body string }{
	{"chat", "/v1/chat/completions", `{"model":"paid","messages":[{"role":"user","content":"hi"}]}`},
	{"responses", "/v1/responses", `{"model":"paid","input":"hi"}`},
	{"gemini", "/v1beta/models/paid:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
	{"converse", "/model/paid/converse", `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`},
}

// Issue 34: a budgeted request that sets no output bound was estimated at
// default_max_tokens but sent upstream unbounded, so one long answer ($10
// here) passed a $5 budget. It is now sent the bound its estimate assumed
// (the alias's max_output_tokens, else default_max_tokens), the answer
// names it, and the spend stays within the budget.
func TestBudgetedRequestWithoutABoundIsSentOne(t *testing.T) {
	for _, models := range []struct {
		name, extra string
		want        int64
	}{
		{"default_max_tokens", "", 4096},
		{"max_output_tokens", "      max_output_tokens: 32000\n", 32000},
	} {
		up, yaml := longUpstream(t, models.extra)
		for _, tc := range unboundedRequests {
			t.Run(models.name+"/"+tc.name, func(t *testing.T) {
				g, rec := testGateway(t, yaml, func(o *GatewayOptions) { o.Budgets = policy.NewBudgets(nil, nil) })
				id := &policy.Identity{KeyID: "k-" + models.name + tc.name, Role: policy.RoleUser,
					Limits: ledger.Limits{BudgetCents: ledger.Cents(500), BudgetPeriod: "monthly"}}
				rr := post(g, id, tc.path, tc.body)
				if rr.Code != http.StatusOK {
					t.Fatalf("%d %s", rr.Code, rr.Body)
				}
				if bound, _ := up.got(); bound != models.want {
					t.Errorf("upstream was sent a bound of %d, want %d", bound, models.want)
				}
				if got := rr.Header().Get(HeaderMaxTokensAdded); got != strconv.FormatInt(models.want, 10) {
					t.Errorf("%s: %q, want %d", HeaderMaxTokensAdded, got, models.want)
				}
				if got := rr.Header().Get(HeaderMaxTokensLowered); got != "" {
					t.Errorf("%s: %q; the added bound fits", HeaderMaxTokensLowered, got)
				}
				recs := rec.Records()
				if len(recs) != 1 {
					t.Fatalf("%d records", len(recs))
				}
				if cost := recs[0].CostPicoUSD; cost > 5e12 {
					t.Errorf("one request spent %d pico of a $5 budget", cost)
				}
			})
		}
	}
}

// The added bound is the smallest max_output_tokens among the deployments
// the alias's chain may reach, and when it does not fit in what is left
// it is lowered like a client's: both headers name what was sent.
func TestBudgetAddedBoundIsTheChainsSmallestAndLowered(t *testing.T) {
	up, yaml := longUpstream(t, "      max_output_tokens: 32000\n")
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	yaml += kindEntry("paid", "openai/fake-paid", srv.URL) + "    model_info:\n      max_output_tokens: 8000\n"
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) { o.Budgets = policy.NewBudgets(nil, nil) })
	id := &policy.Identity{KeyID: "chain", Role: policy.RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(500), BudgetPeriod: "monthly"}}
	rr := post(g, id, "/v1/chat/completions", unboundedRequests[0].body)
	if bound, _ := up.got(); rr.Code != http.StatusOK || bound != 8000 || rr.Header().Get(HeaderMaxTokensAdded) != "8000" {
		t.Fatalf("%d, upstream bound %d, %s %q; want 8000", rr.Code, bound, HeaderMaxTokensAdded, rr.Header().Get(HeaderMaxTokensAdded))
	}

	// 5 cents pay for the input and about 5000 output tokens of the 8000.
	id = &policy.Identity{KeyID: "small", Role: policy.RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(5), BudgetPeriod: "monthly"}}
	rr = post(g, id, "/v1/chat/completions", unboundedRequests[0].body)
	bound, _ := up.got()
	lowered := rr.Header().Get(HeaderMaxTokensLowered)
	if rr.Code != http.StatusOK || bound >= 8000 || bound < 4000 || lowered != strconv.FormatInt(bound, 10) || rr.Header().Get(HeaderMaxTokensAdded) != lowered {
		t.Fatalf("%d, upstream bound %d, lowered %q, added %q", rr.Code, bound, lowered, rr.Header().Get(HeaderMaxTokensAdded))
	}
}

// Without a budget nothing changes: the request goes as its client wrote
// it, without a bound or a header.
func TestUnbudgetedRequestIsSentNoBound(t *testing.T) {
	up, yaml := longUpstream(t, "      max_output_tokens: 32000\n")
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) { o.Budgets = policy.NewBudgets(nil, nil) })
	id := &policy.Identity{KeyID: "free", Role: policy.RoleUser}
	for _, tc := range unboundedRequests {
		rr := post(g, id, tc.path, tc.body)
		if bound, _ := up.got(); rr.Code != http.StatusOK || bound != unboundedAnswer {
			t.Errorf("%s: %d, upstream bound %d; want none sent", tc.name, rr.Code, bound)
		}
		if h := rr.Header(); h.Get(HeaderMaxTokensAdded) != "" || h.Get(HeaderMaxTokensLowered) != "" {
			t.Errorf("%s: headers %v", tc.name, h)
		}
	}
}
