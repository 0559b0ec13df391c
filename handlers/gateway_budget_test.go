package handlers

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// A request reserves the output its client allows, not the gateway's
// default: while one asking for 100k tokens ($100 at $0.001, lowered to
// what the $50 budget pays for) runs, no other request of the budget
// starts (reserving 4096 tokens let 12 of 15 in).
func TestBudgetReservesTheClientsMaxTokens(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body, _ := io.ReadAll(r.Body); strings.Contains(string(body), "first") {
			arrived <- struct{}{}
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`))
	}))
	defer srv.Close()
	defer close(release)
	yaml := "model_list:\n" + kindEntry("m", "openai/m", srv.URL) + "    model_info:\n      input_cost_per_token: 0.001\n      output_cost_per_token: 0.001\n"
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) { o.Budgets = policy.NewBudgets(nil, nil) })
	bob := &policy.Identity{KeyID: "bob", Role: policy.RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(5000)}}
	big := `{"model":"m","max_tokens":100000,"messages":[{"role":"user","content":"first"}]}`
	first := make(chan int)
	go func() { first <- post(g, bob, "/v1/chat/completions", big).Code }()
	<-arrived
	if rr := post(g, bob, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`); rr.Code != http.StatusTooManyRequests {
		t.Errorf("second request while $100 is reserved on a $50 budget: %d %s", rr.Code, rr.Body)
	}
	release <- struct{}{}
	if code := <-first; code != http.StatusOK {
		t.Errorf("first request: %d", code)
	}
}
