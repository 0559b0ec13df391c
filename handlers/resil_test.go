package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testclock"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// A fault before any byte reached the client moves the request to the
// alias's other deployment; the attempt log names the failed deployment.
func TestRetryOnAnotherDeployment(t *testing.T) {
	slow := func(u **fakeUpstream) fault {
		return func(w http.ResponseWriter, r *http.Request, n int64) { (*u).hold(r) }
	}
	cases := []struct {
		name       string
		bad        func(t *testing.T, holder **fakeUpstream) string // returns api_base
		extra      string                                           // per-entry options of the bad deployment
		wantStatus int
		wantErr    string
	}{
		{name: "closed port", bad: func(t *testing.T, _ **fakeUpstream) string { return closedPortURL(t) }, wantErr: "connection_refused"},
		{name: "500", bad: func(t *testing.T, h **fakeUpstream) string {
			*h = newFakeUpstream(t, "bad", statusAnswer(500, ""))
			return (*h).srv.URL
		}, wantStatus: 500},
		{name: "503", bad: func(t *testing.T, h **fakeUpstream) string {
			*h = newFakeUpstream(t, "bad", statusAnswer(503, ""))
			return (*h).srv.URL
		}, wantStatus: 503},
		{name: "429", bad: func(t *testing.T, h **fakeUpstream) string {
			*h = newFakeUpstream(t, "bad", statusAnswer(429, "7"))
			return (*h).srv.URL
		}, wantStatus: 429},
		{name: "reset before answer", bad: func(t *testing.T, h **fakeUpstream) string {
			*h = newFakeUpstream(t, "bad", resetConn)
			return (*h).srv.URL
		}, wantErr: "connection_reset"},
		{name: "slow first byte", extra: "timeout: 0.2", bad: func(t *testing.T, h **fakeUpstream) string {
			*h = newFakeUpstream(t, "bad", slow(h))
			return (*h).srv.URL
		}, wantErr: "timeout"},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				var bad *fakeUpstream
				good := newFakeUpstream(t, "good", nil)
				// The weights make the bad deployment the first pick with
				// certainty for any practical purpose (odds 1e-18).
				extra := []string{"weight: 1000000000"}
				if tc.extra != "" {
					extra = append(extra, tc.extra)
				}
				yaml := "model_list:\n" + entry("m", tc.bad(t, &bad), extra...) + entry("m", good.srv.URL, "weight: 0.000000001")
				g, obs := testGateway(t, yaml, nil)
				rec := post(g, alice, "/v1/chat/completions", chatBody("m", stream))
				if rec.Code != 200 {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				if !strings.Contains(rec.Body.String(), reply("good")) {
					t.Errorf("answer did not come from the good deployment: %s", rec.Body)
				}
				at := obs.Attempts()
				if len(at) != 2 {
					t.Fatalf("attempts = %+v, want 2", at)
				}
				badID, goodID := g.backends["m"][0].Entry().ID, g.backends["m"][1].Entry().ID
				if at[0].Deployment != badID || at[0].Status != tc.wantStatus || at[0].Err != tc.wantErr || !at[0].Retrying {
					t.Errorf("first attempt = %+v, want deployment %s status %d err %q retrying", at[0], badID, tc.wantStatus, tc.wantErr)
				}
				if at[1].Deployment != goodID || at[1].Status != 200 || at[1].Err != "" {
					t.Errorf("second attempt = %+v", at[1])
				}
				for _, a := range at {
					if strings.Contains(fmt.Sprintf("%+v", a), "sk-upstream-secret") {
						t.Errorf("attempt log carries the upstream key: %+v", a)
					}
				}
				if r := obs.Records(); len(r) != 1 || r[0].Outcome != "ok" || r[0].Status != 200 {
					t.Errorf("records = %+v", r)
				}
				if tc.name == "slow first byte" {
					bad.waitAborted(t)
				}
			})
		}
	}
}

// When the alias has nothing left, the fallbacks are tried in order, and
// the last error (with the upstream's Retry-After) reaches the client when
// they fail too.
func TestFallbacksInOrder(t *testing.T) {
	a := newFakeUpstream(t, "a", statusAnswer(500, ""))
	b := newFakeUpstream(t, "b", statusAnswer(429, "9"))
	c := newFakeUpstream(t, "c", nil)
	yaml := "model_list:\n" + entry("a", a.srv.URL) + entry("b", b.srv.URL) + entry("c", c.srv.URL) +
		"router_settings:\n  fallbacks:\n    - a: [b, c]\n    - b: [a]\n"
	g, obs := testGateway(t, yaml, nil)
	rec := post(g, alice, "/v1/chat/completions", chatBody("a", false))
	if rec.Code != 200 || content(t, rec.Body.Bytes()) != reply("c") {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var order []string
	for _, at := range obs.Attempts() {
		order = append(order, at.Alias+"/"+fmt.Sprint(at.Status))
	}
	if got := strings.Join(order, " "); got != "a/500 b/429 c/200" {
		t.Errorf("attempt order = %s", got)
	}

	// b falls back to a; both fail: the client sees the last answer.
	rec = post(g, alice, "/v1/chat/completions", chatBody("b", false))
	if rec.Code != 500 {
		t.Fatalf("status %d, want the fallback's 500: %s", rec.Code, rec.Body)
	}
	if msg := errMessage(t, rec.Body.Bytes()); !strings.Contains(msg, `"b"`) {
		t.Errorf("error does not name the alias: %s", msg)
	}
}

// 4xx other than 429 is the client's fault: no other deployment is tried.
func TestNoRetryOnClientError(t *testing.T) {
	for _, status := range []int{400, 401, 404, 422} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			bad := newFakeUpstream(t, "bad", statusAnswer(status, ""))
			good := newFakeUpstream(t, "good", nil)
			yaml := "model_list:\n" + entry("m", bad.srv.URL, "weight: 1000000000") + entry("m", good.srv.URL, "weight: 0.000000001") +
				entry("n", good.srv.URL) + "router_settings:\n  fallbacks:\n    - m: [n]\n"
			g, obs := testGateway(t, yaml, nil)
			rec := post(g, alice, "/v1/chat/completions", chatBody("m", false))
			if rec.Code != status {
				t.Fatalf("status %d, want %d", rec.Code, status)
			}
			if good.hits.Load() != 0 {
				t.Errorf("the request was retried %d times", good.hits.Load())
			}
			if at := obs.Attempts(); len(at) != 1 || at[0].Retrying {
				t.Errorf("attempts = %+v", at)
			}
			if st := g.backends["m"][0].State().Snapshot(time.Now()); st.RecentFails != 0 {
				t.Errorf("a client error counted against the deployment: %+v", st)
			}
		})
	}
}

// Once a stream has sent a byte, a broken upstream ends it with an error
// event in the caller's format; nothing is retried.
func TestNoRetryAfterFirstByte(t *testing.T) {
	bad := newFakeUpstream(t, "bad", func(w http.ResponseWriter, r *http.Request, n int64) {
		streamStart(w, "partial ")
		resetConn(w, r, n)
	})
	good := newFakeUpstream(t, "good", nil)
	yaml := "model_list:\n" + entry("m", bad.srv.URL, "weight: 1000000000") + entry("m", good.srv.URL, "weight: 0.000000001")
	g, obs := testGateway(t, yaml, nil)

	rec := post(g, alice, "/v1/chat/completions", chatBody("m", true))
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, "partial ") {
		t.Fatalf("status %d: %s", rec.Code, body)
	}
	if !strings.Contains(body, `data: {"error":`) || !strings.Contains(body, "broke off") {
		t.Errorf("stream does not end with an error event: %s", body)
	}
	if good.hits.Load() != 0 {
		t.Errorf("retried after the first byte")
	}
	if r := obs.Records(); len(r) != 1 || r[0].Outcome != "error" || r[0].Status != 502 {
		t.Errorf("records = %+v", r)
	}

	// The Anthropic caller gets an Anthropic error event.
	rec = post(g, alice, "/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if body := rec.Body.String(); !strings.Contains(body, "event: error\ndata: {\"type\":\"error\"") {
		t.Errorf("anthropic stream does not end with an error event: %s", body)
	}
}

// TestCooldownAndProbe: allowed_fails failures put a deployment in
// cooldown; then one probe is let through; while every deployment cools,
// the answer is an immediate 503 naming the alias.
func TestCooldownAndProbe(t *testing.T) {
	var healthy sync.Map
	up := newFakeUpstream(t, "up", func(w http.ResponseWriter, r *http.Request, n int64) {
		if _, ok := healthy.Load("yes"); ok {
			writeOpenAI(w, r, "up")
			return
		}
		statusAnswer(500, "")(w, r, n)
	})
	clk := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	yaml := "model_list:\n" + entry("m", up.srv.URL) + "router_settings:\n  allowed_fails: 2\n  cooldown_time: 30\n"
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) { o.Now = clk.Now })

	for i := 0; i < 2; i++ {
		if rec := post(g, alice, "/v1/chat/completions", chatBody("m", false)); rec.Code != 500 {
			t.Fatalf("request %d: status %d", i, rec.Code)
		}
	}
	rec := post(g, alice, "/v1/chat/completions", chatBody("m", false))
	if rec.Code != 503 || !strings.Contains(errMessage(t, rec.Body.Bytes()), `model "m"`) {
		t.Fatalf("during cooldown: %d %s", rec.Code, rec.Body)
	}
	if up.hits.Load() != 2 {
		t.Errorf("upstream hit %d times, want 2 (none during cooldown)", up.hits.Load())
	}
	hr := serve(g, &policy.Identity{KeyID: "admin", Role: policy.RoleAdmin}, "/health", nil)
	var health struct {
		Deployments []struct {
			Healthy      bool       `json:"healthy"`
			CoolingUntil *time.Time `json:"cooling_down_until"`
		} `json:"deployments"`
	}
	if err := json.Unmarshal(hr.Body.Bytes(), &health); err != nil || len(health.Deployments) != 1 {
		t.Fatalf("health: %s", hr.Body)
	}
	if d := health.Deployments[0]; d.Healthy || d.CoolingUntil == nil || !d.CoolingUntil.Equal(clk.Now().Add(30*time.Second)) {
		t.Errorf("health = %s", hr.Body)
	}

	// Cooldown over, still broken: one probe fails and cooldown restarts.
	clk.Advance(31 * time.Second)
	if rec := post(g, alice, "/v1/chat/completions", chatBody("m", false)); rec.Code != 500 {
		t.Fatalf("probe: %d", rec.Code)
	}
	if rec := post(g, alice, "/v1/chat/completions", chatBody("m", false)); rec.Code != 503 {
		t.Fatalf("after a failed probe: %d, want 503", rec.Code)
	}
	if up.hits.Load() != 3 {
		t.Errorf("upstream hit %d times, want 3", up.hits.Load())
	}

	// Healthy again: the probe succeeds and the deployment is back.
	healthy.Store("yes", true)
	clk.Advance(31 * time.Second)
	for i := 0; i < 3; i++ {
		if rec := post(g, alice, "/v1/chat/completions", chatBody("m", false)); rec.Code != 200 {
			t.Fatalf("after recovery, request %d: %d", i, rec.Code)
		}
	}
	if s := g.backends["m"][0].State().Snapshot(clk.Now()); !s.Healthy || s.RecentFails != 0 {
		t.Errorf("state after recovery = %+v", s)
	}
}

// Only one probe goes through while it is in flight.
func TestOneProbeAtATime(t *testing.T) {
	release := make(chan struct{})
	up := newFakeUpstream(t, "up", func(w http.ResponseWriter, r *http.Request, n int64) {
		if n == 1 {
			statusAnswer(500, "")(w, r, n)
			return
		}
		<-release
		writeOpenAI(w, r, "up")
	})
	clk := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	yaml := "model_list:\n" + entry("m", up.srv.URL) + "router_settings:\n  allowed_fails: 1\n  cooldown_time: 10\n"
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) { o.Now = clk.Now })
	if rec := post(g, alice, "/v1/chat/completions", chatBody("m", false)); rec.Code != 500 {
		t.Fatalf("first: %d", rec.Code)
	}
	clk.Advance(11 * time.Second)
	probe := make(chan int)
	go func() { probe <- post(g, alice, "/v1/chat/completions", chatBody("m", false)).Code }()
	if !testwait.Until(func() bool { return up.hits.Load() >= 2 }) {
		t.Fatalf("the upstream saw %d requests, never 2", up.hits.Load())
	}
	if rec := post(g, alice, "/v1/chat/completions", chatBody("m", false)); rec.Code != 503 {
		t.Errorf("second request during the probe: %d, want 503", rec.Code)
	}
	close(release)
	if code := <-probe; code != 200 {
		t.Errorf("probe: %d", code)
	}
	if rec := post(g, alice, "/v1/chat/completions", chatBody("m", false)); rec.Code != 200 {
		t.Errorf("after the probe: %d", rec.Code)
	}
}

// A local server that is down costs one connection error: the deployment
// cools down at once and the next request does not dial it.
func TestRefusedConnectionCoolsDownAtOnce(t *testing.T) {
	yaml := "model_list:\n" + entry("m", closedPortURL(t)) + "router_settings:\n  allowed_fails: 5\n"
	g, obs := testGateway(t, yaml, nil)
	rec := post(g, alice, "/v1/chat/completions", chatBody("m", false))
	if rec.Code != 502 || !strings.Contains(errMessage(t, rec.Body.Bytes()), "not running") {
		t.Fatalf("first: %d %s", rec.Code, rec.Body)
	}
	start := time.Now()
	rec = post(g, alice, "/v1/chat/completions", chatBody("m", false))
	if rec.Code != 503 {
		t.Fatalf("second: %d %s", rec.Code, rec.Body)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the cooled-down answer took %s", d)
	}
	if n := len(obs.Attempts()); n != 1 {
		t.Errorf("%d upstream attempts, want 1", n)
	}
}

// timeout and stream_timeout end the upstream request, answer 504 before
// the stream started and an error event after.
func TestTimeouts(t *testing.T) {
	var up *fakeUpstream
	up = newFakeUpstream(t, "up", func(w http.ResponseWriter, r *http.Request, n int64) {
		switch r.URL.Path {
		case "/gap/v1/chat/completions":
			streamStart(w, "first ")
			up.hold(r)
		default:
			up.hold(r)
		}
	})
	yaml := "model_list:\n" +
		entry("whole", up.srv.URL, "timeout: 0.15") +
		entry("first", up.srv.URL, "stream_timeout: 0.15") +
		entry("gap", up.srv.URL+"/gap", "stream_timeout: 0.15")
	g, obs := testGateway(t, yaml, nil)
	// router_settings give the default for every entry.
	gr, _ := testGateway(t, "model_list:\n"+entry("router", up.srv.URL)+"router_settings:\n  timeout: 0.15\n", nil)
	for _, tc := range []struct {
		g      *Gateway
		alias  string
		stream bool
		want   int
		msg    string
	}{
		{g, "whole", false, 504, "did not answer within 150ms"},
		{g, "whole", true, 504, "did not answer within 150ms"},
		{gr, "router", false, 504, "did not answer within 150ms"},
		{g, "first", true, 504, "sent nothing within the stream timeout"},
	} {
		rec := post(tc.g, alice, "/v1/chat/completions", chatBody(tc.alias, tc.stream))
		if rec.Code != tc.want || !strings.Contains(errMessage(t, rec.Body.Bytes()), tc.msg) {
			t.Errorf("%s stream=%v: %d %s", tc.alias, tc.stream, rec.Code, rec.Body)
		}
		up.waitAborted(t)
	}
	rec := post(g, alice, "/v1/chat/completions", chatBody("gap", true))
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, "first ") || !strings.Contains(body, "paused longer than 150ms") ||
		!strings.HasSuffix(strings.TrimSpace(body), "}") {
		t.Errorf("gap: %d %s", rec.Code, body)
	}
	up.waitAborted(t)
	recs := obs.Records()
	if len(recs) == 0 {
		t.Fatal("no ledger record for the gap stream")
	}
	if last := recs[len(recs)-1]; last.Status != 504 || last.Outcome != "error" {
		t.Errorf("gap record = %+v", last)
	}
	rec = post(g, alice, "/v1/messages", `{"model":"gap","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if body := rec.Body.String(); !strings.Contains(body, "event: error\n") || !strings.Contains(body, "paused longer") {
		t.Errorf("anthropic gap: %s", body)
	}
	up.waitAborted(t)
}

// A client that disconnects cancels the upstream request at once; the
// ledger gets "cancelled" with the usage seen so far.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	var up *fakeUpstream
	up = newFakeUpstream(t, "up", func(w http.ResponseWriter, r *http.Request, n int64) {
		// An Anthropic stream that reports input usage, one word, then
		// keeps the connection open.
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":13,\"output_tokens\":1}}}\n\n")
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n")
		_ = http.NewResponseController(w).Flush()
		up.hold(r)
	})
	yaml := fmt.Sprintf("model_list:\n  - model_name: c\n    proxy_params:\n      model: anthropic/m\n      api_base: %s\n      api_key: sk-upstream-secret\n", up.srv.URL)
	g, obs := testGateway(t, yaml, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.ServeHTTP(w, r.WithContext(policy.WithIdentity(r.Context(), alice)))
	}))
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(chatBody("c", true)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q: %v", line, err)
	}
	cancel()
	resp.Body.Close()
	up.waitAborted(t)
	deadline := time.Now().Add(5 * time.Second)
	for len(obs.Records()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	recs := obs.Records()
	if len(recs) != 1 {
		t.Fatalf("records = %+v", recs)
	}
	if r := recs[0]; r.Outcome != "cancelled" || r.Status != 499 || r.InputTokens != 13 {
		t.Errorf("record = status %d outcome %q input %d, want 499 cancelled 13", r.Status, r.Outcome, r.InputTokens)
	}
	if s := g.backends["c"][0].State().Snapshot(time.Now()); s.RecentFails != 0 || s.InFlight != 0 {
		t.Errorf("a client disconnect counted against the deployment: %+v", s)
	}
}

// Request body, JSON depth, per-key concurrency and rpm limits.
func TestLimits(t *testing.T) {
	t.Run("body", func(t *testing.T) {
		g, _ := testGateway(t, "model_list:\n  - model_name: e\n    proxy_params:\n      model: echo/e\n", func(o *GatewayOptions) { o.MaxRequestBody = 100 })
		rec := post(g, alice, "/v1/chat/completions", chatBody("e", false)+strings.Repeat(" ", 100))
		if rec.Code != 413 {
			t.Errorf("status %d, want 413", rec.Code)
		}
	})
	t.Run("json depth", func(t *testing.T) {
		g, _ := testGateway(t, "model_list:\n  - model_name: e\n    proxy_params:\n      model: echo/e\n", nil)
		deep := `{"model":"e","messages":[{"role":"user","content":"hi"}],"x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "}"
		if rec := post(g, alice, "/v1/chat/completions", deep); rec.Code != 400 || !strings.Contains(rec.Body.String(), "deeper than 128") {
			t.Errorf("deep: %d %s", rec.Code, rec.Body)
		}
		// Brackets inside strings, escaped quotes included, are text.
		text := `{"model":"e","messages":[{"role":"user","content":"\"` + strings.Repeat("[{", 300) + `"}]}`
		if rec := post(g, alice, "/v1/chat/completions", text); rec.Code != 200 {
			t.Errorf("brackets in a string: %d %s", rec.Code, rec.Body)
		}
	})
	t.Run("per-key concurrency", func(t *testing.T) {
		release := make(chan struct{})
		up := newFakeUpstream(t, "up", func(w http.ResponseWriter, r *http.Request, n int64) {
			<-release
			writeOpenAI(w, r, "up")
		})
		g, _ := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), func(o *GatewayOptions) { o.MaxConcurrentPerKey = 1 })
		first := make(chan int)
		go func() { first <- post(g, alice, "/v1/chat/completions", chatBody("m", false)).Code }()
		if !testwait.Until(func() bool { return up.hits.Load() >= 1 }) {
			t.Fatalf("the upstream saw %d requests, never 1", up.hits.Load())
		}
		rec := post(g, alice, "/v1/chat/completions", chatBody("m", false))
		if rec.Code != 429 || rec.Header().Get("Retry-After") != "1" {
			t.Errorf("second request of the key: %d Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
		}
		other := make(chan int)
		go func() {
			other <- post(g, &policy.Identity{KeyID: "bob", Role: policy.RoleUser}, "/v1/chat/completions", chatBody("m", false)).Code
		}()
		if !testwait.Until(func() bool { return up.hits.Load() >= 2 }) {
			t.Fatalf("the upstream saw %d requests, never 2", up.hits.Load())
		}
		close(release)
		if c1, c2 := <-first, <-other; c1 != 200 || c2 != 200 {
			t.Errorf("first %d, other key %d", c1, c2)
		}
		if rec := post(g, alice, "/v1/chat/completions", chatBody("m", false)); rec.Code != 200 {
			t.Errorf("after the first finished: %d", rec.Code)
		}
	})
	t.Run("rpm", func(t *testing.T) {
		a := newFakeUpstream(t, "a", nil)
		b := newFakeUpstream(t, "b", nil)
		g, _ := testGateway(t, "model_list:\n"+entry("m", a.srv.URL, "rpm: 1")+entry("m", b.srv.URL, "rpm: 1"), nil)
		for i := 0; i < 2; i++ {
			if rec := post(g, alice, "/v1/chat/completions", chatBody("m", false)); rec.Code != 200 {
				t.Fatalf("request %d: %d", i, rec.Code)
			}
		}
		if a.hits.Load() != 1 || b.hits.Load() != 1 {
			t.Errorf("hits a=%d b=%d, want one each", a.hits.Load(), b.hits.Load())
		}
		rec := post(g, alice, "/v1/chat/completions", chatBody("m", false))
		if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
			t.Errorf("beyond rpm: %d Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
		}
	})
}

// panicTransport fails the way a bug in the request path would.
type panicTransport struct{}

func (panicTransport) RoundTrip(*http.Request) (*http.Response, error) { panic("boom in transport") }

func TestPanicBecomes500(t *testing.T) {
	up := newFakeUpstream(t, "up", nil)
	g, obs := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), func(o *GatewayOptions) {
		o.Client = func(*modellist.Deployment) *http.Client { return &http.Client{Transport: panicTransport{}} }
	})
	for _, tc := range []struct{ path, body, errType string }{
		{"/v1/chat/completions", chatBody("m", false), `"error":{`},
		{"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, `"type":"error"`},
	} {
		rec := post(g, alice, tc.path, tc.body)
		if rec.Code != 500 || !strings.Contains(rec.Body.String(), tc.errType) {
			t.Errorf("%s: %d %s", tc.path, rec.Code, rec.Body)
		}
	}
	var logged int
	for _, a := range obs.Attempts() {
		if a.Err == "panic: boom in transport" {
			logged++
		}
	}
	if logged != 2 {
		t.Errorf("panics logged %d times, want 2: %+v", logged, obs.Attempts())
	}
}

// least-busy across real requests: with one deployment holding a request,
// the next goes to the other.
func TestLeastBusyRequests(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	served := map[string]int{}
	mk := func(name string) *fakeUpstream {
		return newFakeUpstream(t, name, func(w http.ResponseWriter, r *http.Request, n int64) {
			mu.Lock()
			served[name]++
			mu.Unlock()
			<-release
			writeOpenAI(w, r, name)
		})
	}
	a, b := mk("a"), mk("b")
	g, _ := testGateway(t, "model_list:\n"+entry("m", a.srv.URL)+entry("m", b.srv.URL)+"router_settings:\n  routing_strategy: least-busy\n", nil)
	done := make(chan int, 2)
	go func() { done <- post(g, alice, "/v1/chat/completions", chatBody("m", false)).Code }()
	if !testwait.Until(func() bool { return a.hits.Load()+b.hits.Load() >= 1 }) {
		t.Fatalf("the upstream saw %d requests, never 1", a.hits.Load()+b.hits.Load())
	}
	go func() { done <- post(g, alice, "/v1/chat/completions", chatBody("m", false)).Code }()
	if !testwait.Until(func() bool { return a.hits.Load()+b.hits.Load() >= 2 }) {
		t.Fatalf("the upstream saw %d requests, never 2", a.hits.Load()+b.hits.Load())
	}
	close(release)
	<-done
	<-done
	if served["a"] != 1 || served["b"] != 1 {
		t.Errorf("served %v, want one each", served)
	}
}

// A reload that keeps a deployment keeps its state: in-flight count,
// latency and cooldown.
func TestStateSurvivesReload(t *testing.T) {
	up := newFakeUpstream(t, "up", nil)
	other := newFakeUpstream(t, "other", nil)
	states := NewStates()
	yaml1 := "model_list:\n" + entry("m", up.srv.URL) + entry("x", other.srv.URL)
	g1, _ := testGateway(t, yaml1, func(o *GatewayOptions) { o.States = states })
	if rec := post(g1, alice, "/v1/chat/completions", chatBody("m", false)); rec.Code != 200 {
		t.Fatal(rec.Code)
	}
	g1.backends["m"][0].State().Start() // a stream still open on the old config
	// The new file changes x and adds y; m is unchanged.
	yaml2 := "model_list:\n" + entry("m", up.srv.URL) + entry("x", other.srv.URL, "rpm: 5") + entry("y", other.srv.URL)
	g2, _ := testGateway(t, yaml2, func(o *GatewayOptions) { o.States = states })
	s := g2.backends["m"][0].State().Snapshot(time.Now())
	if g2.backends["m"][0].State() != g1.backends["m"][0].State() || s.InFlight != 1 || s.RecentTTFTMs == nil {
		t.Errorf("state after reload = %+v", s)
	}
}
