package handlers

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// TestMaxConcurrentPerKeyIsDefaultMaxParallel: the deprecated
// max_concurrent_per_key is the max_parallel of a key that sets none of
// its own: a key with its own max_parallel is held to that instead; a
// refusal is max_parallel's (rate_limit_exceeded, Retry-After: 1) and is
// recorded as refused, as every rate refusal is.
func TestMaxConcurrentPerKeyIsDefaultMaxParallel(t *testing.T) {
	release := make(chan struct{})
	up := newFakeUpstream(t, "up", func(w http.ResponseWriter, r *http.Request, n int64) {
		<-release
		writeOpenAI(w, r, "up")
	})
	g, obs := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), func(o *GatewayOptions) { o.MaxConcurrentPerKey = 1 })
	own := &policy.Identity{KeyID: "own", Role: policy.RoleUser, Limits: ledger.Limits{MaxParallel: 2}}
	held := make(chan int, 3)
	for _, id := range []*policy.Identity{alice, own, own} {
		go func() { held <- post(g, id, "/v1/chat/completions", chatBody("m", false)).Code }()
	}
	if !testwait.Until(func() bool { return up.hits.Load() >= 3 }) {
		t.Fatalf("the upstream saw %d requests, never 3: a key's own max_parallel of 2 did not win over the default of 1", up.hits.Load())
	}
	for _, id := range []*policy.Identity{alice, own} {
		rec := post(g, id, "/v1/chat/completions", chatBody("m", false))
		if rec.Code != 429 || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "rate_limit_exceeded") {
			t.Errorf("%s over its limit: %d Retry-After %q %s", id.KeyID, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	refused := 0
	for _, r := range obs.Records() {
		if r.Outcome == ledger.OutcomeRefused && r.Status == 429 {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d refused records, want 2 (one per refusal)", refused)
	}
	close(release)
	for range 3 {
		if c := <-held; c != 200 {
			t.Errorf("held request: %d", c)
		}
	}
	if rec := post(g, alice, "/v1/chat/completions", chatBody("m", false)); rec.Code != 200 {
		t.Errorf("after the first finished: %d", rec.Code)
	}
}
