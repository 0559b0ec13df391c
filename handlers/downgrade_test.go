package handlers

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// Past a person's spend limit set to `at_cap downgrade free`, a request
// for the paid alias is served by the free one, the answer says so, and
// the record keeps the alias asked for; a downgrade alias whose chain
// falls back to a paid model is never used (the request is refused), nor
// is one the key may not use.
func TestDowngradeAtTheCap(t *testing.T) {
	url, served := modelCounter(t, `{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}`)
	price := "    model_info:\n      input_cost_per_token: 0.001\n      output_cost_per_token: 0.001\n"
	zero := "    model_info:\n      input_cost_per_token: 0\n      output_cost_per_token: 0\n"
	yaml := "model_list:\n" + kindEntry("paid", "openai/paid-up", url) + price +
		kindEntry("free", "openai/free-up", url) + zero +
		kindEntry("unpriced", "openai/unpriced-up", url) +
		kindEntry("leaky", "openai/free-up", url) + zero + kindEntry("pricey", "openai/pricey-up", url) + price +
		"router_settings:\n  fallbacks:\n    - leaky: [pricey]\n"
	g, obs, st, budgets := budgetedGateway(t, yaml)
	set := func(person, to string) { putUserLimit(t, st, person, 0, to, ledger.DowngradeBound{}) }
	set("bob@example.com", "free")
	set("carol@example.com", "leaky")
	set("dan@example.com", "unpriced")
	if err := budgets.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	bob := &policy.Identity{KeyID: "apikey_bob", Owner: "bob@example.com", Role: policy.RoleUser, Runtime: true}
	rr := post(g, bob, "/v1/chat/completions", `{"model":"paid","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	if rr.Code != 200 || rr.Header().Get(HeaderDowngradedFrom) != "paid" {
		t.Fatalf("bob past his cap: %d %q %s", rr.Code, rr.Header().Get(HeaderDowngradedFrom), rr.Body)
	}
	if recs := obs.Records(); len(recs) != 1 || recs[0].Alias != "free" || recs[0].DowngradedFrom != "paid" || recs[0].CostPicoUSD != 0 {
		t.Errorf("bob's record: %+v", recs)
	}
	carol := &policy.Identity{KeyID: "apikey_carol", Owner: "carol@example.com", Role: policy.RoleUser, Runtime: true}
	if rr := post(g, carol, "/v1/chat/completions", `{"model":"paid","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`); rr.Code != 429 {
		t.Errorf("carol's downgrade falls back to a paid model: %d %s", rr.Code, rr.Body)
	}
	// An unpriced model is not free, even at an api_base on loopback
	// (hostile review 4, finding 6).
	dan := &policy.Identity{KeyID: "apikey_dan", Owner: "dan@example.com", Role: policy.RoleUser, Runtime: true}
	if rr := post(g, dan, "/v1/chat/completions", `{"model":"paid","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`); rr.Code != 429 {
		t.Errorf("dan's downgrade to an unpriced model: %d %s", rr.Code, rr.Body)
	}
	if known, why := g.DowngradeTarget("unpriced", ledger.DowngradeBound{}); !known || !strings.Contains(why, "unpriced") {
		t.Errorf("DowngradeTarget(unpriced) = %v %q", known, why)
	}
	if known, why := g.DowngradeTarget("free", ledger.DowngradeBound{}); !known || why != "" {
		t.Errorf("DowngradeTarget(free) = %v %q", known, why)
	}
	if known, _ := g.DowngradeTarget("nope", ledger.DowngradeBound{}); known {
		t.Error("DowngradeTarget knows an alias the models file lacks")
	}
	limited := &policy.Identity{KeyID: "apikey_bob2", Owner: "bob@example.com", Role: policy.RoleUser, Runtime: true, Models: map[string]struct{}{"paid": {}}}
	if rr := post(g, limited, "/v1/chat/completions", `{"model":"paid","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`); rr.Code != 429 {
		t.Errorf("a key that may not use the downgrade alias: %d %s", rr.Code, rr.Body)
	}
	if n := served(); n["paid-up"] != 0 || n["pricey-up"] != 0 || n["unpriced-up"] != 0 || n["free-up"] != 1 {
		t.Errorf("upstream calls %v; want one to the free model only", n)
	}
}

// modelCounter is an OpenAI upstream that answers every request with
// usage, and counts the requests by the model they name.
func modelCounter(t *testing.T, usage string) (url string, served func() map[string]int) {
	var mu sync.Mutex
	counts := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		counts[req.Model]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c1","object":"chat.completion","model":"x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":` + usage + `}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(counts)
	}
}

// budgetedGateway is a gateway of yaml whose budgets read spend limits
// from the SQLite ledger st.
func budgetedGateway(t *testing.T, yaml string) (*Gateway, *recorder, ledger.Store, *policy.Budgets) {
	st, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	budgets := policy.NewBudgets(func() ledger.SpendStore { return st.(ledger.SpendStore) }, nil)
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) { o.Budgets = budgets })
	return g, obs, st, budgets
}

// putUserLimit sets person's monthly limit of cents, at its cap
// downgrading to alias ("" refuses) within bound.
func putUserLimit(t *testing.T, st ledger.Store, person string, cents int64, alias string, bound ledger.DowngradeBound) {
	if _, err := st.(ledger.SpendLimitStore).PutSpendLimit(context.Background(), ledger.SpendLimit{Scope: ledger.ScopeUser, ScopeID: person,
		Period: "monthly", AmountCents: &cents, Downgrade: alias, Bound: bound}); err != nil {
		t.Fatal(err)
	}
}
