package handlers

import (
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testclock"
)

// A session whose deployment is only at its own rpm limit is served
// elsewhere meanwhile but stays pinned: the next minute it is back where
// its cache is.
func TestSessionAffinityKeepsPinWhileRateLimited(t *testing.T) {
	a, b := newFakeUpstream(t, "a", nil), newFakeUpstream(t, "b", nil)
	clk := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	yaml := "model_list:\n" + entry("m", a.srv.URL, "rpm: 2") + entry("m", b.srv.URL, "rpm: 2")
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) { o.Now = clk.Now })
	send := func() {
		t.Helper()
		if rr := post(g, alice, "/v1/chat/completions", chatBody("m", false), "X-Session-Id", "pinned"); rr.Code != 200 {
			t.Fatalf("status %d: %s", rr.Code, rr.Body)
		}
	}
	hits := func() [2]int64 { return [2]int64{a.hits.Load(), b.hits.Load()} }
	send()
	home, other := 0, 1
	if hits()[1] == 1 {
		home, other = 1, 0
	}
	send() // the second request of the minute: still home
	if h := hits(); h[home] != 2 {
		t.Fatalf("the session left its deployment while it had room: %v", h)
	}
	send() // home is at its rpm: the other deployment serves
	if h := hits(); h[other] != 1 {
		t.Fatalf("the rate-limited deployment's session was not served elsewhere: %v", h)
	}
	clk.Advance(time.Minute)
	send()
	if h := hits(); h[home] != 3 {
		t.Errorf("after the rate window the session did not return to its deployment: %v", h)
	}
	if n := g.states.affinity.Len(); n != 1 {
		t.Errorf("%d sessions pinned, want 1", n)
	}
}
