package handlers

import (
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
)

// protoJSONGemini is a Gemini upstream that reads its request as Google's
// proto-JSON parser does, by either name (generationConfig or
// generation_config, maxOutputTokens or max_output_tokens), and bills
// bound × candidates output tokens, a million per candidate when unbounded.
type protoJSONGemini struct {
	mu                sync.Mutex
	bound, candidates int64
}

func (u *protoJSONGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]json.RawMessage
	_ = json.Unmarshal(body, &req)
	either := func(m map[string]json.RawMessage, camel, snake string) json.RawMessage {
		if v, ok := m[camel]; ok && string(v) != "null" {
			return v
		}
		return m[snake]
	}
	var cfg map[string]json.RawMessage
	_ = json.Unmarshal(either(req, "generationConfig", "generation_config"), &cfg)
	bound, cands := int64(1_000_000), int64(1)
	if v := either(cfg, "maxOutputTokens", "max_output_tokens"); v != nil {
		_ = json.Unmarshal(v, &bound)
	}
	if v := either(cfg, "candidateCount", "candidate_count"); v != nil {
		_ = json.Unmarshal(v, &cands)
	}
	u.mu.Lock()
	u.bound, u.candidates = bound, cands
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"MAX_TOKENS","index":0}],` +
		`"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":` + strconv.FormatInt(bound*cands, 10) + `},"modelVersion":"fake"}`))
}

// D3: Google reads proto field names too, and the gateway did not: a
// Gemini request passed through with generation_config.max_output_tokens
// 65536 and candidate_count 8 was estimated at 1 × 4096 and sent as it
// came, spending $5.24 of $1. Both spellings are now read and lowered, on
// the pass-through route and the translated one; a field given under both
// is refused, as proto3's JSON mapping has parsers do.
func TestBudgetReadsGeminiProtoFieldNames(t *testing.T) {
	gem := &protoJSONGemini{}
	gsrv := httptest.NewServer(gem)
	t.Cleanup(gsrv.Close)
	chat, chatYAML := paidUpstream(t)
	prices := "    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00001\n"
	yaml := chatYAML + kindEntry("gem", "gemini/fake", gsrv.URL) + prices
	got := map[string]func() (int64, int64){
		"gem":  func() (int64, int64) { gem.mu.Lock(); defer gem.mu.Unlock(); return gem.bound, gem.candidates },
		"paid": chat.got,
	}
	for _, alias := range []string{"gem", "paid"} {
		for _, body := range []string{
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generation_config":{"max_output_tokens":65536,"candidate_count":8}}`,
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"max_output_tokens":65536,"candidate_count":8}}`,
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":null,"generation_config":{"maxOutputTokens":65536,"candidateCount":8}}`,
		} {
			g, rec := testGateway(t, yaml, func(o *GatewayOptions) { o.Budgets = policy.NewBudgets(nil, nil) })
			id := &policy.Identity{KeyID: "k", Role: policy.RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(100), BudgetPeriod: "monthly"}}
			rr := post(g, id, "/v1beta/models/"+alias+":generateContent", body)
			if rr.Code != http.StatusOK {
				t.Fatalf("%s %s: %d %s", alias, body, rr.Code, rr.Body)
			}
			lowered := rr.Header().Get(HeaderMaxTokensLowered)
			bound, n := got[alias]()
			// With a null generationConfig beside it, the splice gives
			// both the bound; this fake reads the camelCase one (1 candidate).
			if lowered == "" || lowered != strconv.FormatInt(bound, 10) || n != 8 && !strings.Contains(body, "null") {
				t.Errorf("%s %s: upstream sent %d × %d, %s %q", alias, body, bound, n, HeaderMaxTokensLowered, lowered)
			}
			if recs := rec.Records(); len(recs) != 1 || recs[0].CostPicoUSD > 1e12 {
				t.Errorf("%s %s: spent %+v of $1", alias, body, recs)
			}
		}
	}
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) { o.Budgets = policy.NewBudgets(nil, nil) })
	id := &policy.Identity{KeyID: "k2", Role: policy.RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(100), BudgetPeriod: "monthly"}}
	rr := post(g, id, "/v1beta/models/gem:generateContent",
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":10,"max_output_tokens":65536}}`)
	if rr.Code != http.StatusBadRequest || !strings.Contains(rr.Body.String(), "given twice") {
		t.Errorf("both spellings: %d %s; want 400 given twice", rr.Code, rr.Body)
	}
}
