package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testwait"
)

// TestDowngradeToAPricedAliasStopsAtTheAllowance: through the binary, a
// key's spend limit of $0 with `at_cap downgrade cheap` under a price
// bound and a 2-cent allowance. A downgrade whose chain falls back to a
// dearer model is refused when it is set; past the cap, requests for the
// paid model are served by the cheap one, charged, and recorded with the
// alias asked for, until the allowance is spent, then refused naming it.
// The paid upstream is never called; the cheap one only within the
// allowance, and the ledger's spend stays within it.
func TestDowngradeToAPricedAliasStopsAtTheAllowance(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	models := "model_list:\n" +
		pricedEntry("paid", "anthropic/claude-fake", u.anthropic.URL, "upstream-anthropic-secret", "0.000003", "0.000025") +
		pricedEntry("cheap", "openai/fake-mini", u.openai.URL+"/v1", "upstream-openai-secret", "0.00001", "0.00002") +
		pricedEntry("leaky", "openai/fake-mini", u.openai.URL+"/v1", "upstream-openai-secret", "0.00001", "0.00002") +
		"router_settings:\n  fallbacks:\n    - leaky: [paid]\n"
	g := startGateway(t, gatewayConfig{models: models})
	// $10 and $20 per million tokens: the cheap model's prices, and
	// under them the paid fallback's $25 output is not.
	bound := `"max_price":{"input":"1000","output":"2000"},"allowance":"2"`
	if st, _, body := g.do(t, http.MethodPost, adminapi.SpendLimitsPath, adminKey,
		`{"amount":"0","scope":{"type":"api_key","api_key_id":"alice"},"period":"daily","at_cap":{"action":"downgrade","alias":"leaky",`+bound+`}}`); st != http.StatusBadRequest ||
		!strings.Contains(string(body), `alias \"paid\": anthropic/claude-fake costs $3 input ($6 to write the prompt cache), $25 output`) {
		t.Errorf("a downgrade whose fallback is dearer than the bound: %d %s", st, body)
	}
	if st, _, body := g.do(t, http.MethodPost, adminapi.SpendLimitsPath, adminKey,
		`{"amount":"0","scope":{"type":"api_key","api_key_id":"alice"},"period":"daily","at_cap":{"action":"downgrade","alias":"cheap",`+bound+`}}`); st != http.StatusOK {
		t.Fatalf("setting alice's limit: %d %s", st, body)
	}
	// Admission reads the limits with the spend every second; /v1/me shows
	// what it holds.
	if !testwait.Until(func() bool {
		_, _, me := g.do(t, http.MethodGet, "/v1/me", aliceKey, "")
		return strings.Contains(string(me), `"scope":"api_key","period":"daily","amount":"0"`)
	}) {
		t.Fatal("alice's limit never reached admission")
	}
	req := `{"model":"paid","max_tokens":16,"messages":[{"role":"user","content":"downgrade me"}]}`
	served, refusal := 0, ""
	for range 100 {
		st, h, body := g.do(t, http.MethodPost, "/v1/messages", aliceKey, req)
		if st == http.StatusTooManyRequests {
			refusal = string(body)
			break
		}
		if st != http.StatusOK || h.Get("X-Modelgate-Downgraded-From") != "paid" {
			t.Fatalf("request %d past the cap: %d %q %s", served, st, h.Get("X-Modelgate-Downgraded-From"), body)
		}
		served++
	}
	if served == 0 || !strings.Contains(refusal, "$0.02 past it that requests downgraded to cheap may spend") {
		t.Fatalf("%d served, then %q; want some served, then the allowance's refusal", served, refusal)
	}
	if n := u.anthropicRec.Count(); n != 0 {
		t.Errorf("the paid upstream was called %d times", n)
	}
	if n := u.openaiRec.Count(); n != served {
		t.Errorf("the cheap upstream was called %d times, %d served", n, served)
	}
	var spent int64
	for _, r := range g.ledgerRecords(t) {
		if r.Status != http.StatusOK {
			continue
		}
		if r.Alias != "cheap" || r.DowngradedFrom != "paid" || r.CostPicoUSD <= 0 {
			t.Errorf("a record past the cap: alias %s from %q cost %d", r.Alias, r.DowngradedFrom, r.CostPicoUSD)
		}
		spent += r.CostPicoUSD
	}
	if allowance := int64(2e10); spent > allowance || spent < allowance/2 {
		t.Errorf("spent %d picodollars past a $0 cap with a 2-cent allowance", spent)
	}
}

// pricedEntry is a models-file entry of alias for model at base, priced
// per input and output token in model_info.
func pricedEntry(alias, model, base, key, input, output string) string {
	return fmt.Sprintf("  - model_name: %s\n    proxy_params:\n      model: %s\n      api_base: %s\n      api_key: %s\n"+
		"    model_info:\n      input_cost_per_token: %s\n      output_cost_per_token: %s\n", alias, model, base, key, input, output)
}

// TestPricedDowngradeGroupRuleValidated: a group rule's priced downgrade
// whose chain falls back to a model dearer than its bound is a config
// error naming the group, the alias and the dearer deployment; within
// the bound it validates.
func TestPricedDowngradeGroupRuleValidated(t *testing.T) {
	dir := t.TempDir()
	models := "model_list:\n" +
		pricedEntry("paid", "anthropic/claude-fake", "https://api.anthropic.com", "k", "0.000003", "0.000025") +
		pricedEntry("cheap", "openai/fake-mini", "https://api.openai.com/v1", "k", "0.00001", "0.00002") +
		pricedEntry("leaky", "openai/fake-mini", "https://api.openai.com/v1", "k", "0.00001", "0.00002") +
		"router_settings:\n  fallbacks:\n    - leaky: [paid]\n"
	if err := os.WriteFile(filepath.Join(dir, "models.yaml"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	for alias, want := range map[string]string{
		"leaky": `group eng: at_cap downgrade leaky: "leaky" is dearer than the bound ($10 input, cache writes included, $20 output per million tokens): alias "paid": anthropic/claude-fake costs $3 input ($6 to write the prompt cache), $25 output`,
		"cheap": "",
	} {
		cf := filepath.Join(dir, "Caddyfile-"+alias)
		if err := os.WriteFile(cf, []byte(fmt.Sprintf(`{
	admin off
	modelgate {
		ledger sqlite %s
	}
}
http://127.0.0.1:0 {
	llm_auth {
		admin_key sk-test-admin-0123456789
		oidc {
			issuer http://127.0.0.1:1
			client_id gateway
		}
		group eng {
			budget 1 monthly
			at_cap downgrade %s max_price 10 20 allowance 5
		}
	}
	llm_admin
	llm_gateway {
		models %s
	}
}
`, filepath.Join(dir, "ledger.db"), alias, filepath.Join(dir, "models.yaml"))), 0o600); err != nil {
			t.Fatal(err)
		}
		out, stderr, err := caddyCmd(t, nil, "validate", "--config", cf, "--adapter", "caddyfile")
		if want == "" && (err != nil || !strings.Contains(out, "Valid configuration")) {
			t.Errorf("a priced downgrade within its bound: %v\n%s%s", err, out, stderr)
		}
		if want != "" && (err == nil || !strings.Contains(stderr, want)) {
			t.Errorf("a priced downgrade past its bound: %v\n%s", err, stderr)
		}
	}
}
