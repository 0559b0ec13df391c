package handlers

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// TestResumedStreamCountsBothPartsInTheTPMWindow: a stream cut and
// continued on the fallback leaves both parts' tokens in the key's tpm
// window, not the continuation's alone (a hostile review found the cut
// part's tokens never reached it).
func TestResumedStreamCountsBothPartsInTheTPMWindow(t *testing.T) {
	yaml, _ := fallbackPair(t, wordPieces(), "the end.", "")
	now := time.Date(2030, 1, 2, 3, 4, 10, 0, time.UTC)
	rates := policy.NewRateLimits(nil, 0, func() time.Time { return now }, nil)
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) { o.Rates = rates })
	id := &policy.Identity{KeyID: "cut", Role: policy.RoleUser, Limits: ledger.Limits{TPM: 1_000_000}}
	w := post(g, id, "/v1/messages", `{"model":"a","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "Anthropic-Version", "2023-06-01")
	if w.Code != 200 || !strings.Contains(w.Body.String(), "the end.") {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	cutRec, restRec := cutAndRest(t, obs)
	hold, d, refusal := rates.Admit(context.Background(), id, ledger.Limits{}, 0)
	if refusal != nil {
		t.Fatal(refusal)
	}
	hold.Release(0)
	if used, want := d.Tokens.Limit-d.Tokens.Remaining, cutRec.TotalTokens()+restRec.TotalTokens(); used != want {
		t.Errorf("the tpm window counts %d tokens; want both parts' %d (cut %d, rest %d)", used, want, cutRec.TotalTokens(), restRec.TotalTokens())
	}
}

// wordPieces are ten 40-byte pieces of text: 100 tokens a client read.
func wordPieces() []string {
	pieces := make([]string, 10)
	for i := range pieces {
		pieces[i] = strings.Repeat("word ", 8)
	}
	return pieces
}

// fallbackPair is the models file of alias a, whose Anthropic stream
// (pieces) is cut, and its fallback b, which continues it with rest;
// price follows each entry. cont records the continuation's requests.
func fallbackPair(t *testing.T, pieces []string, rest, price string) (yaml string, cont *anthropicScript) {
	cont = &anthropicScript{pieces: []string{rest}}
	one, two := httptest.NewServer(&anthropicScript{pieces: pieces, cut: true}), httptest.NewServer(cont)
	t.Cleanup(one.Close)
	t.Cleanup(two.Close)
	return "model_list:\n" + kindEntry("a", "anthropic/claude-x", one.URL) + price + kindEntry("b", "anthropic/claude-x", two.URL) + price +
		"router_settings:\n  fallbacks:\n    - a: [b]\n", cont
}
