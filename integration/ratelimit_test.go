package integration

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
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
