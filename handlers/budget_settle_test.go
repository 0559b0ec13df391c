package handlers

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// Newcomer B1, the cause: a request's reservation was settled only when
// its handler returned, after the client had the whole answer. A stream
// whose upstream keeps the connection open after [DONE] shows it: the
// client has its answer and sends the next request, which was refused for
// the first one's estimate. The reservation is now settled before the
// answer's end is written.
func TestBudgetSettledBeforeTheAnswersEnd(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept")+readAll(r), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"c2","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5}}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n" +
			"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":5}}\n\n" +
			"data: [DONE]\n\n"))
		w.(http.Flusher).Flush()
		<-release // the upstream keeps the connection open
	}))
	defer up.Close()
	defer close(release)
	yaml := "model_list:\n" + kindEntry("paid", "openai/m", up.URL) +
		"    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00001\n"
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) { o.Budgets = policy.NewBudgets(nil, nil) })
	id := &policy.Identity{KeyID: "b1", Role: policy.RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(5), BudgetPeriod: "monthly"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.ServeHTTP(w, r.WithContext(policy.WithIdentity(r.Context(), id)))
	}))
	defer srv.Close()
	// 6,000 output tokens at $0.00001: a 6-cent worst case on 5 cents,
	// admitted on all 5; it costs a tenth of a cent.
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"paid","stream":true,"max_tokens":6000,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && sc.Text() != "data: [DONE]" {
	}
	// The client has its answer's end: its next request finds the room.
	rr := post(g, id, "/v1/chat/completions", `{"model":"paid","max_tokens":100,"messages":[{"role":"user","content":"again"}]}`)
	if rr.Code != http.StatusOK {
		t.Errorf("the request after a finished stream: %d %s", rr.Code, rr.Body)
	}
}

func readAll(r *http.Request) string {
	var b strings.Builder
	_, _ = bufio.NewReader(r.Body).WriteTo(&b)
	return b.String()
}
