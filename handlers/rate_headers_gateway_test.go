package handlers

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// TestRateHeadersInTheClientsFamily: the door writes policy's rate
// decision in the names the client's format reads, on an admitted request
// and on the refusal (OpenAI's x-ratelimit-* with a wait in seconds,
// Anthropic's anthropic-ratelimit-* with the window's end as a time).
func TestRateHeadersInTheClientsFamily(t *testing.T) {
	up := newFakeUpstream(t, "up", nil)
	now := time.Date(2030, 1, 2, 3, 4, 10, 0, time.UTC)
	g, _ := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), func(o *GatewayOptions) {
		o.Rates = policy.NewRateLimits(nil, 0, func() time.Time { return now }, nil)
	})
	bob := &policy.Identity{KeyID: "bob", Role: policy.RoleUser, Limits: ledger.Limits{RPM: 2, TPM: 100000}}

	rr := post(g, bob, "/v1/chat/completions", chatBody("m", false))
	h := rr.Header()
	if rr.Code != http.StatusOK || h.Get("X-Ratelimit-Limit-Requests") != "2" || h.Get("X-Ratelimit-Remaining-Requests") != "1" ||
		h.Get("X-Ratelimit-Reset-Requests") != "50s" || h.Get("X-Ratelimit-Limit-Tokens") != "100000" || h.Get("Anthropic-Ratelimit-Requests-Limit") != "" {
		t.Fatalf("chat client: %d %v", rr.Code, h)
	}
	messages := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	rr = post(g, bob, "/v1/messages", messages)
	h = rr.Header()
	if rr.Code != http.StatusOK || h.Get("Anthropic-Ratelimit-Requests-Limit") != "2" || h.Get("Anthropic-Ratelimit-Requests-Remaining") != "0" ||
		h.Get("Anthropic-Ratelimit-Requests-Reset") != "2030-01-02T03:05:00Z" || h.Get("X-Ratelimit-Limit-Requests") != "" {
		t.Fatalf("Messages client: %d %v", rr.Code, h)
	}
	rr = post(g, bob, "/v1/messages", messages)
	h = rr.Header()
	if rr.Code != http.StatusTooManyRequests || h.Get("Anthropic-Ratelimit-Requests-Remaining") != "0" || h.Get("Retry-After") != "50" ||
		!strings.Contains(rr.Body.String(), `"rate_limit_error"`) {
		t.Fatalf("Messages client past its rpm: %d %v %s", rr.Code, h, rr.Body)
	}
}
