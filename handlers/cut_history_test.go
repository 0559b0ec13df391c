package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// A Responses turn continuing a stored history by previous_response_id
// whose client leaves mid-stream, before the upstream's usage, is charged
// for the input the upstream was sent: the whole history, not only the
// few bytes of its new input (a hostile review found such turns recorded
// at 24 input tokens while the upstream billed 50,000).
func TestCutStreamWithStoredHistoryIsChargedForTheHistory(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Stream bool }
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":50000,"completion_tokens":1,"total_tokens":50001}}`)
			return
		}
		chatDeltasUntilGone(w, r) // the client leaves before the usage chunk
	}))
	defer srv.Close()
	store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rs := store.(ledger.ResponseStore)
	yaml := "model_list:\n" + kindEntry("m", "openai/m", srv.URL) + "    model_info:\n      input_cost_per_token: 0.000001\n      output_cost_per_token: 0.000002\n"
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) { o.Responses = func() ledger.ResponseStore { return rs } })

	history := strings.Repeat("word ", 40_000) // 200 KB
	rr := post(g, alice, "/v1/responses", mustJSON(t, map[string]any{"model": "m", "store": true, "input": history}))
	var first struct{ ID string }
	if err := json.Unmarshal(rr.Body.Bytes(), &first); rr.Code != http.StatusOK || err != nil || first.ID == "" {
		t.Fatalf("turn 1: %d %s", rr.Code, rr.Body)
	}
	body := `{"model":"m","stream":true,"previous_response_id":"` + first.ID + `","input":"hi"}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(body)).WithContext(policy.WithIdentity(ctx, alice))
	g.ServeHTTP(&leavesAfter{ResponseRecorder: httptest.NewRecorder(), marker: "tok5", leave: cancel}, req)
	recs := obs.Records()
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	if r := recs[1]; r.Outcome != "cancelled" || r.InputTokens < int64(len(history)/4) {
		t.Errorf("turn 2 record %s: in %d out %d; want the stored history's ~%d input tokens charged", r.Outcome, r.InputTokens, r.OutputTokens, len(history)/4)
	}
}
