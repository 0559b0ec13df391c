package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// A client that leaves a stream after reading the answer, before the
// upstream's last event (the only one with usage, as OpenAI-compatible
// servers send it), is still charged: the prompt and the output it read
// are estimated, not recorded as nothing.
func TestCancelledStreamIsChargedForWhatWasSent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 6 {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"}}]}\n\n", i)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done() // the usage chunk never comes: the client leaves first
	}))
	defer srv.Close()
	yaml := "model_list:\n" + kindEntry("m", "openai/m", srv.URL) + "    model_info:\n      input_cost_per_token: 0.000001\n      output_cost_per_token: 0.000002\n"
	g, obs := testGateway(t, yaml, nil)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("word ", 40) + `"}]}`
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)).WithContext(policy.WithIdentity(ctx, alice))
	g.ServeHTTP(&leavesAfter{ResponseRecorder: httptest.NewRecorder(), marker: "tok5", leave: cancel}, req)
	recs := obs.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.Outcome != "cancelled" || r.InputTokens != int64(len(body)/4) || r.OutputTokens < 6 || r.CostPicoUSD <= 0 {
		t.Errorf("record %s: in %d out %d cost %d; want the prompt (%d) and at least the 6 chunks sent charged", r.Outcome, r.InputTokens, r.OutputTokens, r.CostPicoUSD, len(body)/4)
	}
}

// leavesAfter is a client that goes away once it has read marker.
type leavesAfter struct {
	*httptest.ResponseRecorder
	marker string
	leave  func()
}

func (l *leavesAfter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), l.marker) {
		defer l.leave()
	}
	return l.ResponseRecorder.Write(p)
}
