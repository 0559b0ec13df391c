package integration

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testlane"
)

// TestRateLimits: a key's rpm refuses the request over it with a retry
// the client can honour and the caller's family of rate-limit headers;
// max_parallel refuses a request while another is in progress.
func TestRateLimits(t *testing.T) {
	u := startUpstreams(t, fakes.Options{Gap: 150 * time.Millisecond})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	// Late in a minute the window could roll over between requests.
	if s := time.Now().Second(); s > 55 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	k := createKey(t, g, `{"name":"slow","rpm":2}`)
	for i := 0; i < 2; i++ {
		status, h, _ := g.do(t, "POST", "/v1/chat/completions", k.Value, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 || h.Get("X-Ratelimit-Limit-Requests") != "2" || h.Get("X-Ratelimit-Remaining-Requests") != strconv.Itoa(1-i) {
			t.Fatalf("request %d: %d %v", i, status, h)
		}
	}
	status, h, body := g.do(t, "POST", "/v1/chat/completions", k.Value, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`)
	ra, _ := strconv.Atoi(h.Get("Retry-After"))
	if status != 429 || ra < 1 || ra > 60 || h.Get("X-Ratelimit-Remaining-Requests") != "0" || h.Get("X-Should-Retry") == "false" ||
		!strings.Contains(string(body), `"code":"rate_limit_exceeded"`) || !strings.Contains(string(body), "2 requests per minute") {
		t.Errorf("over rpm: %d %v %s", status, h, body)
	}
	status, h, body = g.do(t, "POST", "/v1/messages", k.Value, `{"model":"echo","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 429 || h.Get("Anthropic-Ratelimit-Requests-Limit") != "2" || !strings.Contains(string(body), "rate_limit_error") {
		t.Errorf("over rpm, Anthropic family: %d %v %s", status, h, body)
	}

	p := createKey(t, g, `{"name":"one-at-a-time","max_parallel":1}`)
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The fake streams its words 150 ms apart: the first request
			// is still running when the second arrives.
			time.Sleep(time.Duration(i) * 100 * time.Millisecond)
			statuses[i], _, _ = g.do(t, "POST", "/v1/chat/completions", p.Value, `{"model":"oa","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		}()
	}
	wg.Wait()
	if statuses[0] != 200 || statuses[1] != http.StatusTooManyRequests {
		t.Errorf("max_parallel 1, two at once: %v", statuses)
	}
	if status, _, _ := g.do(t, "POST", "/v1/chat/completions", p.Value, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`); status != 200 {
		t.Errorf("after the first finished: %d", status)
	}
}

// TestRateLimitsSharedThroughRedis: two instances on one Redis count one
// rpm between them; with Redis gone both keep serving on their own counts.
func TestRateLimitsSharedThroughRedis(t *testing.T) {
	redisURL := testlane.RedisURL(t)
	if s := time.Now().Second(); s > 50 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	dsn, _, _ := freshSchema(t)
	u := startUpstreams(t, fakes.Options{})
	ledgerLine := "ledger postgres {env.DATABASE_URL}\n\t\tlimits redis {env.REDIS_URL}"
	cfg := gatewayConfig{models: u.modelsYAML(), ledgerLine: ledgerLine,
		env: []string{"REDIS_URL=" + redisURL, "DATABASE_URL=" + dsn.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	key := createKey(t, a, `{"name":"shared-rpm","rpm":4}`).Value
	waitStatus(t, b, key, "echo", 200) // b knows the key; that request counts too
	ok := 0
	for i := 0; i < 8; i++ {
		g := a
		if i%2 == 1 {
			g = b
		}
		if status, _, _ := g.do(t, "POST", "/v1/chat/completions", key, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`); status == 200 {
			ok++
		}
	}
	if ok != 3 {
		t.Errorf("%d of 8 requests across two instances passed one shared rpm of 4 (one was spent already)", ok)
	}

	// Redis unreachable: per-process limits, no failed requests.
	down := gatewayConfig{models: u.modelsYAML(), ledgerLine: "ledger postgres {env.DATABASE_URL}\n\t\tlimits redis redis://127.0.0.1:1/0",
		env: []string{"DATABASE_URL=" + dsn.String()}}
	c := startGateway(t, down)
	waitStatus(t, c, key, "echo", 200)
	for i := 1; i < 4; i++ {
		if status, _, body := c.do(t, "POST", "/v1/chat/completions", key, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`); status != 200 {
			t.Fatalf("with Redis down, request %d: %d %s", i, status, body)
		}
	}
	if status, _, _ := c.do(t, "POST", "/v1/chat/completions", key, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`); status != 429 {
		t.Errorf("with Redis down the process's own rpm still applies: %d", status)
	}
	if !strings.Contains(c.stderr.String(), "the shared rate-limit counter failed") {
		t.Error("no warning that Redis is down")
	}
}
