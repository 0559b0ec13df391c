package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
)

// countingUpstream is one deployment of an alias: an OpenAI fake that
// counts the requests it answered and can be made to fail.
type countingUpstream struct {
	srv  *httptest.Server
	hits atomic.Int64
	fail atomic.Bool
}

func startCounting(t *testing.T) *countingUpstream {
	t.Helper()
	c := &countingUpstream{}
	ok := fakes.OpenAI(fakes.Options{}, nil)
	bad := fakes.OpenAI(fakes.Options{Status: http.StatusInternalServerError}, nil)
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.fail.Load() {
			bad.ServeHTTP(w, r)
			return
		}
		c.hits.Add(1)
		ok.ServeHTTP(w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// poolModels is one alias over the given deployments.
func poolModels(extra string, ups ...*countingUpstream) string {
	s := "model_list:\n"
	for i, u := range ups {
		s += fmt.Sprintf("  - model_name: pool\n    proxy_params:\n      model: openai/fake-gpt-%d\n      api_base: %s/v1\n      api_key: k\n", i, u.srv.URL)
	}
	return s + extra
}

// A session stays on one deployment of its alias across 20 turns while
// requests without a session, and many sessions, are balanced across the
// deployments; when its deployment fails the session moves, and then
// stays on the new one even after the old one has recovered.
func TestSessionAffinity(t *testing.T) {
	a, b := startCounting(t), startCounting(t)
	g := startGateway(t, gatewayConfig{models: poolModels("", a, b)})
	ups := []*countingUpstream{a, b}
	hits := func() [2]int64 { return [2]int64{a.hits.Load(), b.hits.Load()} }
	chat := `{"model":"pool","messages":[{"role":"user","content":"hi"}]}`
	turn := func(headers ...string) {
		t.Helper()
		if st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, chat, headers...); st != 200 {
			t.Fatalf("status %d: %s", st, body)
		}
	}
	// Which deployment a batch of requests went to.
	spread := func(n int, send func(i int)) [2]int64 {
		before := hits()
		for i := 0; i < n; i++ {
			send(i)
		}
		after := hits()
		return [2]int64{after[0] - before[0], after[1] - before[1]}
	}

	// One session, 20 turns: one deployment.
	s1 := spread(20, func(int) { turn("X-Session-Id", "affinity-s1") })
	if s1[0] != 20 && s1[1] != 20 {
		t.Fatalf("session s1 was spread over both deployments: %v", s1)
	}
	// Claude Code's session (metadata.user_id on the Messages API) too.
	msg := `{"model":"pool","max_tokens":16,"metadata":{"user_id":"user_ab_account_cd_session_affinity-cc"},"messages":[{"role":"user","content":"hi"}]}`
	cc := spread(20, func(int) {
		if st, _, body := g.do(t, "POST", "/v1/messages", aliceKey, msg, "anthropic-version", "2023-06-01"); st != 200 {
			t.Fatalf("status %d: %s", st, body)
		}
	})
	if cc[0] != 20 && cc[1] != 20 {
		t.Fatalf("Claude Code's session was spread over both deployments: %v", cc)
	}
	// Without a session the shuffle balances; 40 draws from two equal
	// weights all landing on one has a probability of 2^-39.
	none := spread(40, func(int) { turn() })
	if none[0] == 0 || none[1] == 0 {
		t.Errorf("requests without a session were not balanced: %v", none)
	}
	// Twenty sessions, one turn each, land on both deployments.
	many := spread(20, func(i int) { turn("X-Session-Id", fmt.Sprintf("affinity-many-%d", i)) })
	if many[0] == 0 || many[1] == 0 {
		t.Errorf("twenty sessions were not balanced: %v", many)
	}
	home, other := 0, 1
	if s1[1] == 20 {
		home, other = 1, 0
	}
	// s1 is still where it was.
	if again := spread(5, func(int) { turn("X-Session-Id", "affinity-s1") }); again[home] != 5 {
		t.Errorf("s1 moved while its deployment was healthy: first %v, then %v", s1, again)
	}

	// Failover: s1's deployment fails; the session moves and stays.
	ups[home].fail.Store(true)
	moved := spread(1, func(int) { turn("X-Session-Id", "affinity-s1") })
	if moved[other] != 1 {
		t.Fatalf("the failed deployment's session was not served by the other one: %v", moved)
	}
	ups[home].fail.Store(false)
	stays := spread(10, func(int) { turn("X-Session-Id", "affinity-s1") })
	if stays[other] != 10 {
		t.Errorf("after failover the session went back to a deployment that had failed it: %v", stays)
	}
	t.Logf("s1 %v, claude code %v, no session %v, 20 sessions %v, after failover %v", s1, cc, none, many, stays)
}

// With session_affinity: false a session is balanced like any request.
func TestSessionAffinityOff(t *testing.T) {
	a, b := startCounting(t), startCounting(t)
	g := startGateway(t, gatewayConfig{models: poolModels("router_settings:\n  session_affinity: false\n", a, b)})
	for i := 0; i < 40; i++ {
		if st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"pool","messages":[{"role":"user","content":"hi"}]}`, "X-Session-Id", "off-s1"); st != 200 {
			t.Fatalf("status %d: %s", st, body)
		}
	}
	if a.hits.Load() == 0 || b.hits.Load() == 0 {
		t.Errorf("affinity off: one session's 40 requests all went to one deployment (%d, %d)", a.hits.Load(), b.hits.Load())
	}
}
