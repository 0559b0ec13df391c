package integration

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testlane"
)

// openStream starts a streamed chat request and returns once its answer
// has begun (the gateway admitted it and holds its slot) or was refused;
// end cancels it.
func openStream(t *testing.T, g *gateway, key, body string) (status int, end func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	req, err := http.NewRequestWithContext(ctx, "POST", g.base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return 0, func() {}
	}
	if resp.StatusCode == 200 {
		_, _ = bufio.NewReader(resp.Body).ReadString('\n')
	}
	return resp.StatusCode, func() { resp.Body.Close(); cancel() }
}

// streamToEnd sends a streamed chat request and reads it to the end.
func streamToEnd(t *testing.T, g *gateway, key, body string) int {
	status, _, _ := g.do(t, "POST", "/v1/chat/completions", key, body)
	return status
}

// redisCLI runs redis-cli against the test Redis.
func redisCLI(t *testing.T, redisURL string, args ...string) string {
	t.Helper()
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("redis-cli", append([]string{"-h", u.Hostname(), "-p", u.Port()}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// sharedLimits starts two gateways on one PostgreSQL and one Redis.
func sharedLimits(t *testing.T, u *upstreams, limitsBlock string) (redisURL string, a, b *gateway) {
	t.Helper()
	redisURL = testlane.RedisURL(t)
	dsn, _, _ := freshSchema(t)
	cfg := gatewayConfig{models: u.modelsYAML(), ledgerLine: "ledger postgres {env.DATABASE_URL}\n\t\tlimits redis {env.REDIS_URL}" + limitsBlock,
		env: []string{"REDIS_URL=" + redisURL, "DATABASE_URL=" + dsn.String()}}
	return redisURL, startGateway(t, cfg), startGateway(t, cfg)
}

// TestTPMHoldsUnderConcurrency: 30 requests at once, each allowed 5000
// output tokens, against a tpm of 10000 across two instances: each
// reserves its bound (5000 and its input bytes) while it runs, so no
// more than two are admitted, where all 30 were before.
func TestTPMHoldsUnderConcurrency(t *testing.T) {
	if s := time.Now().Second(); s > 45 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	// Each stream takes about two seconds: all 30 are in flight together.
	u := startUpstreams(t, fakes.Options{Gap: 400 * time.Millisecond})
	_, a, b := sharedLimits(t, u, "")
	key := createKey(t, a, `{"name":"tpm","tpm":10000}`).Value
	waitStatus(t, b, key, "echo", 200)    // b knows the key
	if s := time.Now().Second(); s > 45 { // the check above may have crossed into a late second
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	body := `{"model":"oa","stream":true,"max_tokens":5000,"messages":[{"role":"user","content":"hi"}]}`
	statuses := make([]int, 30)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := a
			if i%2 == 1 {
				g = b
			}
			statuses[i] = streamToEnd(t, g, key, body)
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, s := range statuses {
		switch s {
		case 200:
			ok++
		case 429:
			refused++
		}
	}
	t.Logf("%d admitted, %d refused", ok, refused)
	if ok < 1 || ok > 2 || ok+refused != 30 {
		t.Errorf("30 concurrent requests of 5000 tokens against a tpm of 10000: %d admitted, %d refused: %v", ok, refused, statuses)
	}
	// A request estimated past the whole tpm is not refused for ever (no
	// SDK would retry that): it waits for a window of its own, so here,
	// in the window the 5000-token requests filled, it gets a retryable
	// 429 naming the limit.
	status, h, out := a.do(t, "POST", "/v1/chat/completions", key, `{"model":"echo","max_tokens":20000,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 429 || h.Get("X-Should-Retry") == "false" || h.Get("Retry-After") == "" || !strings.Contains(string(out), "10000 tokens per minute") {
		t.Errorf("a request larger than the tpm, in a used window: %d %v %s", status, h, out)
	}
}

// TestSlotsOfAKilledInstanceComeBack: a key with max_parallel 3 has two
// streams on an instance; they keep their slots past the lease while they
// run, and when the instance is killed the other instance gets the
// capacity back within the slot lease although the key stays busy.
func TestSlotsOfAKilledInstanceComeBack(t *testing.T) {
	u := startUpstreams(t, fakes.Options{Gap: 3 * time.Second})
	redisURL, a, b := sharedLimits(t, u, " {\n\t\t\tslot_lease 6s\n\t\t}")
	k := createKey(t, a, `{"name":"par","max_parallel":3}`)
	waitStatus(t, b, k.Value, "echo", 200)
	body := `{"model":"oa","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for i := 0; i < 2; i++ {
		if status, _ := openStream(t, b, k.Value, body); status != 200 {
			t.Fatalf("stream %d on b: %d", i, status)
		}
	}
	// Running past a lease, the streams keep their slots: b renews them.
	time.Sleep(7 * time.Second)
	if n := redisCLI(t, redisURL, "ZCARD", "modelgate:rl:key:"+k.ID+":leases"); n != "2" {
		t.Fatalf("%s leases held by two streams running past the lease, want 2", n)
	}
	_ = b.cmd.Process.Kill()
	<-b.done
	killed := time.Now()
	// The dead instance's slots still count: one left.
	status, end := openStream(t, a, k.Value, body)
	if status != 200 {
		t.Fatalf("the one free slot: %d", status)
	}
	if s, _, out := a.do(t, "POST", "/v1/chat/completions", k.Value, body); s != 429 || !strings.Contains(string(out), "requests in progress") {
		t.Errorf("a fourth request while the dead instance's leases hold: %d %s", s, out)
	}
	end()
	// The key stays busy on a while the leases run out.
	for {
		var ends []func()
		admitted := 0
		for i := 0; i < 3; i++ {
			s, e := openStream(t, a, k.Value, body)
			ends = append(ends, e)
			if s == 200 {
				admitted++
			}
		}
		for _, e := range ends {
			e()
		}
		if admitted == 3 {
			t.Logf("three slots back %v after the kill (lease 6 s)", time.Since(killed).Round(100*time.Millisecond))
			break
		}
		if time.Since(killed) > 20*time.Second {
			t.Fatalf("20 s after the kill, %d of 3 slots back (lease 6 s)", admitted)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSlotsComeBackAfterARedisStall: streams end while Redis is paused
// for longer than a release waits (2 s), so their releases time out; they
// are retried when Redis answers, and the slots are back long before the
// ten-minute lease (they used to stay taken until the key idled ten
// minutes).
func TestSlotsComeBackAfterARedisStall(t *testing.T) {
	u := startUpstreams(t, fakes.Options{Gap: 200 * time.Millisecond})
	redisURL, a, b := sharedLimits(t, u, "")
	k := createKey(t, a, `{"name":"stall","max_parallel":4}`)
	waitStatus(t, b, k.Value, "echo", 200)
	body := `{"model":"oa","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	var wg sync.WaitGroup
	started := make(chan int, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, end := openStream(t, a, k.Value, body)
			started <- s
			if s == 200 {
				// The stream finishes (in about a second) during the pause.
				time.Sleep(4 * time.Second)
			}
			end()
		}()
	}
	for i := 0; i < 4; i++ {
		if s := <-started; s != 200 {
			t.Fatalf("stream %d: %d", i, s)
		}
	}
	paused := time.Now()
	redisCLI(t, redisURL, "CLIENT", "PAUSE", "5000", "ALL")
	wg.Wait()
	leases := "modelgate:rl:key:" + k.ID + ":leases"
	deadline := time.Now().Add(30 * time.Second)
	for redisCLI(t, redisURL, "ZCARD", leases) != "0" {
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the stall, %s leases still held", redisCLI(t, redisURL, "ZCARD", leases))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("leases released %v after a 5 s pause began", time.Since(paused).Round(100*time.Millisecond))
	// b counted nothing through the stall: its four slots are Redis's.
	var ends []func()
	defer func() {
		for _, e := range ends {
			e()
		}
	}()
	for i := 0; i < 4; i++ {
		s, e := openStream(t, b, k.Value, body)
		ends = append(ends, e)
		if s != 200 {
			t.Fatalf("slot %d after the stall: %d", i, s)
		}
	}
	if s, _, _ := b.do(t, "POST", "/v1/chat/completions", k.Value, body); s != 429 {
		t.Errorf("a fifth request: %d", s)
	}
}
