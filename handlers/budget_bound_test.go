package handlers

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// boundUpstream is an OpenAI chat upstream that bills what it was allowed
// to: completion_tokens = (max_completion_tokens or max_tokens, else
// unbounded, else 1000) × n, as the hostile review's fake did. It keeps
// the last bound it got.
type boundUpstream struct {
	mu        sync.Mutex
	bound, n  int64
	unbounded int64
}

func (u *boundUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		MaxTokens           *int64 `json:"max_tokens"`
		MaxCompletionTokens *int64 `json:"max_completion_tokens"`
		N                   *int64 `json:"n"`
	}
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &req)
	bound, n := cmp.Or(u.unbounded, 1000), int64(1)
	if req.MaxTokens != nil {
		bound = *req.MaxTokens
	}
	if req.MaxCompletionTokens != nil {
		bound = *req.MaxCompletionTokens
	}
	if req.N != nil {
		n = *req.N
	}
	u.mu.Lock()
	u.bound, u.n = bound, n
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"length"}],` +
		`"usage":{"prompt_tokens":` + strconv.Itoa(len(body)/4) + `,"completion_tokens":` + strconv.FormatInt(bound*n, 10) + `}}`))
}

// paidUpstream starts a boundUpstream behind an alias "paid" priced at
// $0.00001 per input and output token, the hostile review's prices.
func paidUpstream(t *testing.T) (*boundUpstream, string) {
	up := &boundUpstream{}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	return up, "model_list:\n" + kindEntry("paid", "openai/fake-paid", srv.URL) +
		"    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00001\n"
}

func (u *boundUpstream) got() (int64, int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bound, u.n
}

// N2: one request of a $5 key asking for n:128 × max_tokens:1000000 at
// $0.00001 a token ($1,280 worst case) spent 225× the budget. Its output
// bound is now lowered to what the $5 pays for, the upstream is sent that
// bound, the answer says so, and the spend stays within the budget, in
// every client format: chat passed through, Responses, Gemini and
// Converse translated to the chat upstream.
func TestBudgetLowersTheOutputBoundToWhatIsLeft(t *testing.T) {
	up, yaml := paidUpstream(t)
	cases := []struct {
		name, path, body string
		choices          int64
	}{
		{"chat", "/v1/chat/completions", `{"model":"paid","max_tokens":1000000,"n":128,"messages":[{"role":"user","content":"hi"}]}`, 128},
		{"chat-unbounded", "/v1/chat/completions", `{"model":"paid","messages":[{"role":"user","content":"hi"}]}`, 1},
		{"responses", "/v1/responses", `{"model":"paid","max_output_tokens":1000000,"input":"hi"}`, 1},
		{"gemini", "/v1beta/models/paid:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":1000000,"candidateCount":4}}`, 4},
		// D1: Converse's inferenceConfig.maxTokens was never lowered (nor
		// added), though the header said it was.
		{"converse", "/model/paid/converse", `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":1000000}}`, 1},
		{"converse-unbounded", "/model/paid/converse", `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, rec := testGateway(t, yaml, func(o *GatewayOptions) {
				o.Budgets = policy.NewBudgets(nil, nil)
				o.DefaultMaxTokens = 1 << 30 // the unbounded case's default is past the budget too
			})
			id := &policy.Identity{KeyID: "k-" + tc.name, Role: policy.RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(500), BudgetPeriod: "monthly"}}
			rr := post(g, id, tc.path, tc.body)
			if rr.Code != http.StatusOK {
				t.Fatalf("%d %s", rr.Code, rr.Body)
			}
			lowered, err := strconv.ParseInt(rr.Header().Get(HeaderMaxTokensLowered), 10, 64)
			if err != nil || lowered <= 0 {
				t.Fatalf("%s: %q; want the lowered bound", HeaderMaxTokensLowered, rr.Header().Get(HeaderMaxTokensLowered))
			}
			bound, n := up.got()
			if bound != lowered || n != tc.choices {
				t.Errorf("upstream was sent a bound of %d × n %d; the answer says %d × %d", bound, n, lowered, tc.choices)
			}
			recs := rec.Records()
			if len(recs) != 1 {
				t.Fatalf("%d records", len(recs))
			}
			// The input is estimated at a token a byte, the upstream bills
			// a token per 4: the spend is within the budget.
			if cost := recs[0].CostPicoUSD; cost > 5e12 || cost < 4e12 {
				t.Errorf("one request spent %d pico of a $5 budget; want at most $5, and most of it usable", cost)
			}
			// Nothing is left for a second request's input and one token.
			if rr := post(g, id, tc.path, tc.body); rr.Code != http.StatusTooManyRequests || !strings.Contains(rr.Body.String(), "spent") {
				t.Errorf("second request: %d %s", rr.Code, rr.Body)
			}
		})
	}
}

// A request whose worst case fits is sent as its client wrote it.
func TestBudgetKeepsTheBoundWhenTheWorstCaseFits(t *testing.T) {
	up, yaml := paidUpstream(t)
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) { o.Budgets = policy.NewBudgets(nil, nil) })
	id := &policy.Identity{KeyID: "fits", Role: policy.RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(500), BudgetPeriod: "monthly"}}
	rr := post(g, id, "/v1/chat/completions", `{"model":"paid","max_tokens":1000,"n":2,"messages":[{"role":"user","content":"hi"}]}`)
	if rr.Code != http.StatusOK || rr.Header().Get(HeaderMaxTokensLowered) != "" {
		t.Fatalf("%d %q %s", rr.Code, rr.Header().Get(HeaderMaxTokensLowered), rr.Body)
	}
	if bound, n := up.got(); bound != 1000 || n != 2 {
		t.Errorf("upstream got %d × %d, want 1000 × 2", bound, n)
	}
}

// An alias's estimate takes its input at the dearest input price and its
// output at the dearest output price of the deployments it may reach,
// each apart, though no one deployment has both: a request routed to
// either stays within what it reserved.
func TestBudgetEstimatePricesInputAndOutputAtTheirDearest(t *testing.T) {
	yaml := "model_list:\n" +
		kindEntry("mixed", "openai/a", "http://127.0.0.1:1") +
		"    model_info:\n      input_cost_per_token: 0.00003\n      output_cost_per_token: 0.00001\n" +
		kindEntry("mixed", "openai/b", "http://127.0.0.1:1") +
		"    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00005\n"
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) { o.DefaultMaxTokens = 100 })
	body := []byte(`{"model":"mixed"}`)
	e := g.estimate("mixed", body, providers.RequestInfo{})
	// $0.00003 and $0.00005 a token, in picodollars.
	in, out := int64(len(body))*30_000_000, int64(50_000_000)
	if e.budget.InputPico != in || e.budget.TokenPico != out || e.budget.Tokens != 100 {
		t.Fatalf("estimate %+v, want input %d, a token %d, 100 tokens", e.budget, in, out)
	}
}
