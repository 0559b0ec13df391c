package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// A non-streaming request whose client leaves after the upstream accepted
// it, while the upstream is still writing its answer, is recorded with
// the input the upstream was sent (which it bills) and counted against
// the key's budget: before, it was recorded with no usage at all, so a
// background run cancelled just before its end cost nothing.
func TestCutNonStreamRequestIsChargedItsInput(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion",`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	yaml := "model_list:\n" + kindEntry("m", "openai/m", srv.URL) + "    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00001\n"
	budgets := policy.NewBudgets(nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The client leaves the moment the upstream's answer has begun.
	leave := leaveOnAnswer{cancel: cancel}
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) {
		o.Budgets = budgets
		o.Client = func(*modellist.Deployment) *http.Client { return &http.Client{Transport: leave} }
	})
	id := &policy.Identity{KeyID: "cutbody", Role: policy.RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(500), BudgetPeriod: "monthly"}}
	prompt := strings.Repeat("word ", 2000) // 10 KB, ~2500 tokens
	body := `{"model":"m","messages":[{"role":"user","content":"` + prompt + `"}]}`
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)).WithContext(policy.WithIdentity(ctx, id))
	g.ServeHTTP(httptest.NewRecorder(), req)
	recs := obs.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.InputTokens < int64(len(prompt)/4) || r.CostPicoUSD <= 0 {
		t.Errorf("cut record %s: in %d cost %d; want the ~%d input tokens sent upstream charged", r.Outcome, r.InputTokens, r.CostPicoUSD, len(prompt)/4)
	}
	st := budgets.Status(id, ledger.Limits{}, "")
	if want := ledger.ShortCents(r.CostPicoUSD); len(st) != 1 || st[0].Spent != want || r.CostPicoUSD == 0 {
		t.Errorf("budget status %+v, want spent %s (the cut request's input)", st, want)
	}
}

// leaveOnAnswer cancels the client's context once the upstream's answer
// headers arrived, so the gateway is cut while reading the answer's body.
type leaveOnAnswer struct{ cancel context.CancelFunc }

func (l leaveOnAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		l.cancel()
	}
	return resp, err
}
