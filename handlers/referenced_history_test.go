package handlers

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// A file or URL sent on an earlier Responses turn is billed again on
// every turn continuing it by previous_response_id, though the later
// body names none: such a turn reserves its input at the context window
// too, so a person's cap holds (a hostile review ended at $3.00 spent
// against a $2.50 cap on turns of a few bytes each).
func TestReferencedContentInStoredHistoryReservesTheContextWindow(t *testing.T) {
	url, served := modelCounter(t, `{"prompt_tokens":100000,"completion_tokens":5,"total_tokens":100005}`)
	// $10 per million input tokens, a 200k-token window: $2 reserved for
	// referenced content, $1 billed a turn.
	yaml := "model_list:\n" + kindEntry("paid", "openai/paid-up", url) +
		"    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00002\n      max_input_tokens: 200000\n"
	st, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	budgets := policy.NewBudgets(func() ledger.SpendStore { return st.(ledger.SpendStore) }, nil)
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) {
		o.Budgets = budgets
		o.Responses = func() ledger.ResponseStore { return st.(ledger.ResponseStore) }
	})
	putUserLimit(t, st, "ann@example.com", 250, "", ledger.DowngradeBound{})
	if err := budgets.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	ann := &policy.Identity{KeyID: "apikey_ann", Owner: "ann@example.com", Role: policy.RoleUser, Runtime: true}

	rr := post(g, ann, "/v1/responses", `{"model":"paid","max_output_tokens":16,"store":true,"input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/big.png"}]}]}`)
	var prev struct{ ID string }
	if err := json.Unmarshal(rr.Body.Bytes(), &prev); rr.Code != 200 || err != nil || prev.ID == "" {
		t.Fatalf("turn 1: %d %s", rr.Code, rr.Body)
	}
	codes := []int{200}
	for range 3 {
		rr = post(g, ann, "/v1/responses", `{"model":"paid","max_output_tokens":16,"store":true,"previous_response_id":"`+prev.ID+`","input":"again"}`)
		codes = append(codes, rr.Code)
		if rr.Code != 200 && rr.Code != 429 {
			t.Fatalf("turn %d: %d %s", len(codes), rr.Code, rr.Body)
		}
		if rr.Code == 200 {
			_ = json.Unmarshal(rr.Body.Bytes(), &prev)
		}
	}
	var spent int64
	for _, r := range obs.Records() {
		if r.KeyID == "apikey_ann" {
			spent += r.CostPicoUSD
		}
	}
	if spent > 250e10 || codes[1] != 429 {
		t.Errorf("turns %v, upstream calls %v: ann spent $%.2f against a $2.50 cap; want the second turn refused (its history's image reserved at the window)",
			codes, served(), float64(spent)/1e12)
	}
}
