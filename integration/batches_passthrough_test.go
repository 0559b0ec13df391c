package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
)

type passthroughRun struct {
	AnthropicCreated, AnthropicPolled string
	AnthropicCounts                   map[string]int
	AnthropicResults                  []struct{ ID, Type, Model, Text string }
	AnthropicCancel                   string
	AnthropicCanceled                 int
	AnthropicOverBudget               string
	OpenaiCreated, OpenaiStatus       string
	OpenaiCounts                      map[string]int
	OpenaiOutput                      []struct {
		ID     string
		Status int
		Model  string
		Text   string
	}
	OpenaiCancel    string
	OpenaiCancelled map[string]int
}

// passthroughModels are the aliases pclaude (anthropic/) and poa
// (openai/) on the fake provider account at base, priced so that the
// records' costs show the batch discount.
func passthroughModels(base string) string {
	prices := "    model_info:\n      input_cost_per_token: 0.000003\n      output_cost_per_token: 0.000015\n"
	return "model_list:\n" +
		"  - model_name: pclaude\n    proxy_params:\n      model: anthropic/claude-upstream-x\n      api_base: " + base + "\n      api_key: sk-batch-provider\n      batch: provider\n" + prices +
		"  - model_name: poa\n    proxy_params:\n      model: openai/gpt-upstream-y\n      api_base: " + base + "/v1\n      api_key: sk-batch-provider\n      batch: provider\n" + prices
}

// TestBatchesPassthroughTwoInstancesPostgres: the official Anthropic and
// OpenAI SDKs create batches on instance A of two sharing a PostgreSQL
// ledger; they go to the fake provider's Message Batches and Files +
// Batch APIs with the deployment's credential and upstream models; B
// answers the polls, settles each batch once, serves the results with
// the aliases, and cancels; a batch over the key's budget is refused at
// create. The ledger has one record per request that ran, at half the
// list price, however many instances and polls saw the batch end.
func TestBatchesPassthroughTwoInstancesPostgres(t *testing.T) {
	dsn, conn, schema := freshSchema(t)
	fake := &fakes.BatchAPI{Key: "sk-batch-provider", Hold: true}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/finish" {
			fake.Finish()
			return
		}
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	const tightKey = "sk-tight-0123456789abcdef"
	cfg := gatewayConfig{models: passthroughModels(srv.URL), ledgerLine: "ledger postgres {env.DATABASE_URL}",
		env:         []string{"DATABASE_URL=" + dsn.String(), "TIGHT_KEY=" + tightKey},
		authExtra:   "key {env.TIGHT_KEY} {\n\t\t\tid tight\n\t\t\tbudget 1 monthly\n\t\t}",
		globalExtra: ""}
	a, b := startGateway(t, cfg), startGateway(t, cfg)

	dir, node := testbin.NodeSDKs(t)
	installScript(t, dir, "batch_poll.mjs")
	out := runNode(t, dir, node, installScript(t, dir, "batches_passthrough.mjs"), "MODELGATE_BASE_A="+a.base, "MODELGATE_BASE_B="+b.base,
		"MODELGATE_API_KEY="+aliceKey, "MODELGATE_TIGHT_KEY="+tightKey, "MODELGATE_CLAUDE=pclaude", "MODELGATE_OA=poa",
		"MODELGATE_FINISH="+srv.URL+"/finish")
	var res passthroughRun
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("script output: %v: %s", err, out)
	}
	if res.AnthropicCreated != "in_progress" || res.AnthropicPolled != "in_progress" || res.AnthropicCounts["succeeded"] != 3 || len(res.AnthropicResults) != 3 {
		t.Errorf("anthropic batch: %s", out)
	}
	for _, r := range res.AnthropicResults {
		if r.Type != "succeeded" || r.Model != "pclaude" || r.Text != fakes.DefaultReply {
			t.Errorf("anthropic result %+v", r)
		}
	}
	if res.AnthropicCancel != "canceling" || res.AnthropicCanceled != 1 || res.AnthropicOverBudget != "429 rate_limit_error" {
		t.Errorf("anthropic cancel and budget: %s", out)
	}
	if res.OpenaiCreated != "in_progress" || res.OpenaiStatus != "completed" || res.OpenaiCounts["completed"] != 2 || len(res.OpenaiOutput) != 2 {
		t.Errorf("openai batch: %s", out)
	}
	for _, o := range res.OpenaiOutput {
		if o.Status != 200 || o.Model != "poa" || o.Text != fakes.DefaultReply {
			t.Errorf("openai output %+v", o)
		}
	}
	if res.OpenaiCancel != "cancelling" || res.OpenaiCancelled["failed"] != 2 {
		t.Errorf("openai cancel: %s", out)
	}
	creates, bad := fake.Creates()
	models := fake.Models()
	if creates != 4 || bad != 0 {
		t.Errorf("the provider got %d batches (want 4: the one over budget never reaches it), %d calls with another credential", creates, bad)
	}
	for _, m := range models {
		if m != "claude-upstream-x" && m != "gpt-upstream-y" {
			t.Errorf("the provider was sent model %q, not the upstream model", m)
		}
	}
	// One record per request that ran: 3 + 2, at half of 10 × $3/M + 5 × $15/M.
	rows, err := conn.Query(context.Background(), "SELECT alias, key_id, cost_pico, service_tier FROM "+schema+".usage_records WHERE endpoint = 'batch'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	perAlias := map[string]int{}
	for rows.Next() {
		var alias, key, tier string
		var cost int64
		if err := rows.Scan(&alias, &key, &cost, &tier); err != nil {
			t.Fatal(err)
		}
		if key != "alice" || cost != (10*3_000_000+5*15_000_000)/2 || tier != "batch" {
			t.Errorf("record of %s: key %s, cost %d pico, tier %s", alias, key, cost, tier)
		}
		perAlias[alias]++
	}
	if perAlias["pclaude"] != 3 || perAlias["poa"] != 2 {
		t.Errorf("batch records per alias %v, want pclaude 3 and poa 2, each once", perAlias)
	}
	var holds int
	if err := conn.QueryRow(context.Background(), "SELECT COUNT(*) FROM "+schema+".budget_reservations WHERE expires_us > 0 AND ticket IN (SELECT hold_ticket FROM "+schema+".batch_passthrough)").Scan(&holds); err != nil {
		t.Fatal(err)
	}
	if holds != 0 {
		t.Errorf("%d budget holds left after every batch settled", holds)
	}
}
