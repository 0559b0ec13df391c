package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

func TestPct(t *testing.T) {
	d := make([]time.Duration, 100)
	for i := range d {
		d[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.9, 90 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := pct(d, tc.q); got != tc.want {
			t.Errorf("pct(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if pct(nil, .5) != 0 {
		t.Error("pct of nothing is not zero")
	}
}

func TestStampOf(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int64
		ok   bool
	}{
		{`data: {"choices":[{"index":0,"delta":{"content":"1730000000123456789"},"finish_reason":null}]}` + "\n", 1730000000123456789, true},
		{`data: {"choices":[{"index":0,"delta":{"content":"hello"}}]}` + "\n", 0, false},
		{`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n", 0, false},
		{"data: [DONE]\n", 0, false},
	} {
		got, ok := stampOf([]byte(tc.line))
		if got != tc.want || ok != tc.ok {
			t.Errorf("stampOf(%q) = %d, %v; want %d, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	// Field 2 with a space and a parenthesis, as a process may name itself.
	stat := "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 130 0 0 20 0 9 0 123 456 789\n"
	got, err := parseStatCPU([]byte(stat))
	if err != nil || got != 3.8 {
		t.Fatalf("parseStatCPU = %v, %v; want 3.8", got, err)
	}
	if _, err := parseStatCPU([]byte("4242 (x) S 1 2")); err == nil {
		t.Fatal("short stat line accepted")
	}
	self, err := cpuSeconds(os.Getpid())
	if err != nil || self < 0 {
		t.Fatalf("cpuSeconds(self) = %v, %v", self, err)
	}
}

func TestParseStatusMem(t *testing.T) {
	status := "Name:\tcaddy\nVmPeak:\t  900000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40960 kB\nThreads:\t9\n"
	m, err := parseStatusMem([]byte(status))
	if err != nil || m.rssMB != 40 || m.hwmMB != 50 {
		t.Fatalf("parseStatusMem = %+v, %v; want 40 MB RSS, 50 MB HWM", m, err)
	}
	if _, err := parseStatusMem([]byte("Name:\tx\nVmRSS:\t1 kB\n")); err == nil {
		t.Fatal("status without VmHWM accepted")
	}
	if _, err := readMem(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

// TestDriveJSON runs the load generator against the OpenAI fake and checks
// that it counts what the server saw.
func TestDriveJSON(t *testing.T) {
	rec := &fakes.Recorder{}
	srv := httptest.NewServer(upstreamMuxWith(fakes.Options{}, rec))
	defer srv.Close()
	tg := target{url: srv.URL + "/openai/v1/chat/completions", header: http2json(), body: chatBody("fake-gpt", false)}
	res := drive(context.Background(), newClient(4), tg, 4, 200*time.Millisecond)
	if res.requests == 0 || res.errors != 0 {
		t.Fatalf("requests %d, errors %d (%s)", res.requests, res.errors, res.firstErr)
	}
	if len(res.latency) != res.requests {
		t.Fatalf("%d latencies for %d requests", len(res.latency), res.requests)
	}
	// Requests cut off by the end of the run reach the server but are not counted.
	if got := rec.Count(); got < res.requests || got > res.requests+4 {
		t.Fatalf("server saw %d requests, generator counted %d", got, res.requests)
	}
	if !strings.Contains(string(rec.Last().Body), `"model":"fake-gpt"`) {
		t.Fatalf("upstream got %q", rec.Last().Body)
	}
	if pct(res.latency, .5) <= 0 || pct(res.latency, .99) < pct(res.latency, .5) {
		t.Fatalf("latency percentiles out of order: %v", res.latency[:min(5, len(res.latency))])
	}
}

func TestDriveErrors(t *testing.T) {
	srv := httptest.NewServer(upstreamMuxWith(fakes.Options{Status: 500}, nil))
	defer srv.Close()
	tg := target{url: srv.URL + "/openai/v1/chat/completions", header: http2json(), body: chatBody("fake-gpt", false)}
	res := drive(context.Background(), newClient(2), tg, 2, 100*time.Millisecond)
	if res.requests != 0 || res.errors == 0 || !strings.Contains(res.firstErr, "status 500") {
		t.Fatalf("requests %d, errors %d, first %q", res.requests, res.errors, res.firstErr)
	}
}

// TestDriveStamped streams from the stamped upstream and checks every
// chunk's delay was measured and is plausible.
func TestDriveStamped(t *testing.T) {
	srv := httptest.NewServer(upstreamMux(fakes.Options{Chunks: 5, Gap: time.Millisecond}))
	defer srv.Close()
	tg := target{url: srv.URL + "/ts/v1/chat/completions", header: http2json(), body: chatBody("fake-stamped", true), stream: true, stamped: true}
	res := drive(context.Background(), newClient(2), tg, 2, 300*time.Millisecond)
	if res.requests == 0 || res.errors != 0 {
		t.Fatalf("requests %d, errors %d (%s)", res.requests, res.errors, res.firstErr)
	}
	if len(res.ttfb) != res.requests || len(res.chunk) != 5*res.requests {
		t.Fatalf("%d requests, %d ttfb, %d chunk delays (want 5 per stream)", res.requests, len(res.ttfb), len(res.chunk))
	}
	if res.chunk[0] < 0 || pct(res.chunk, .5) > 100*time.Millisecond {
		t.Fatalf("chunk delays implausible: min %v p50 %v", res.chunk[0], pct(res.chunk, .5))
	}
	// Four gaps of 1 ms separate the five chunks.
	if pct(res.latency, .5) < 4*time.Millisecond {
		t.Fatalf("stream p50 %v shorter than its gaps", pct(res.latency, .5))
	}
}

func TestStampedStreamWire(t *testing.T) {
	srv := httptest.NewServer(upstreamMux(fakes.Options{Chunks: 3}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/ts/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var stamps, usage int
	var last string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if _, ok := stampOf([]byte(l)); ok {
			stamps++
		}
		if strings.Contains(l, `"choices":[],"usage":{"prompt_tokens"`) {
			usage++
		}
		if l != "" {
			last = l
		}
	}
	if stamps != 3 || usage != 1 || last != "data: [DONE]" {
		t.Fatalf("stamps %d, usage chunks %d, last line %q", stamps, usage, last)
	}
}

func TestHoldStreams(t *testing.T) {
	srv := httptest.NewServer(upstreamMux(fakes.Options{}))
	defer srv.Close()
	tg := target{url: srv.URL + "/idle/v1/chat/completions", header: http2json(), body: chatBody("fake-idle", true)}
	done := make(chan idleResult, 1)
	go func() { done <- holdStreams(context.Background(), tg, 50, 8, os.Getpid(), nil) }()
	select {
	case r := <-done:
		if r.open != 50 || r.failed != 0 || r.rssMB <= 0 {
			t.Fatalf("%+v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("holdStreams did not return after cancelling its streams")
	}
}

func TestPackageBin(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ json, want string }{
		{`{"bin":"build/start-server.js"}`, "build/start-server.js"},
		{`{"bin":{"portkey":"build/start-server.js"}}`, "build/start-server.js"},
		{`{"main":"index.js"}`, "index.js"},
	} {
		p := dir + "/package.json"
		if err := os.WriteFile(p, []byte(tc.json), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := packageBin(p); err != nil || got != tc.want {
			t.Errorf("packageBin(%s) = %q, %v; want %q", tc.json, got, err, tc.want)
		}
	}
}

func TestMedianRound(t *testing.T) {
	mk := func(n int, rss float64) *report {
		return &report{rows: []row{
			{scenario: scenario{key: "caddy"}, res: &loadResult{requests: n, elapsed: time.Second}},
			{scenario: scenario{key: "idle-gw", kind: idleHold}, idle: idleResult{rssMB: rss}},
		}}
	}
	first := mk(300, 0)
	first.rows = first.rows[:1] // idle rows come only with the last round
	got := medianRound([]*report{first, mk(100, 70), mk(200, 80)})
	if got.rounds != 3 || len(got.rows) != 2 || got.rows[0].res.requests != 200 || got.rows[1].idle.rssMB != 80 {
		t.Fatalf("median rows: %d req, %.0f MB", got.rows[0].res.requests, got.rows[1].idle.rssMB)
	}
}

func TestParseInstances(t *testing.T) {
	got, err := parseInstances("1, 2,4")
	if err != nil || len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 4 {
		t.Fatalf("parseInstances = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "two", "-1", "33"} {
		if _, err := parseInstances(bad); err == nil {
			t.Errorf("parseInstances(%q) accepted", bad)
		}
	}
}

func TestWithSearchPath(t *testing.T) {
	got, err := withSearchPath("postgres://u@127.0.0.1:5432/db?sslmode=disable", "bench_x")
	if err != nil || got != "postgres://u@127.0.0.1:5432/db?search_path=bench_x&sslmode=disable" || schemaOf(got) != "bench_x" {
		t.Fatalf("URL form: %q, %v (schema %q)", got, err, schemaOf(got))
	}
	got, err = withSearchPath("host=127.0.0.1 dbname=db ", "bench_y")
	if err != nil || got != "host=127.0.0.1 dbname=db search_path=bench_y" || schemaOf(got) != "bench_y" {
		t.Fatalf("key=value form: %q, %v (schema %q)", got, err, schemaOf(got))
	}
	if _, err := withSearchPath("host=x search_path=public", "bench_z"); err == nil {
		t.Fatal("a key=value DSN that already sets search_path was accepted")
	}
}

// TestOvershoot: spend past the limit counts per key, keys that never
// spent are under, and one reservation short of the limit is not "left
// short".
func TestOvershoot(t *testing.T) {
	const limit, res = 100, 15
	spend := map[string]int64{"a": 100, "b": 112, "c": 130, "d": 86, "e": 84, "stranger": 1000}
	st := overshoot(spend, []string{"a", "b", "c", "d", "e", "never"}, limit, res)
	if st.keys != 6 || st.over != 2 || st.maxOver != 30 || st.totalOver != 42 || st.maxRatio != 1.3 || st.under != 2 {
		t.Fatalf("%+v; want 6 keys, 2 over, max 30, total 42, worst 1.3×, 2 left short (e and never)", st)
	}
	if st := overshoot(nil, nil, limit, res); st != (overshootStats{}) {
		t.Fatalf("no keys: %+v", st)
	}
}

// TestPricedRequest pins the arithmetic the table's units rest on: the
// gateway reserves every body byte as an input token and max_tokens of
// output; the fake answers with 8 uncached input and 7 output tokens.
func TestPricedRequest(t *testing.T) {
	body := pricedBody()
	if res := reservationPico(body, pricedMaxTokens); res != int64(len(body))*20_000_000+8*1_000_000_000 {
		t.Fatalf("reservation %d", res)
	}
	if c := requestCostPico(); c != 7_160_000_000 {
		t.Fatalf("request cost %d pico, want $0.00716", c)
	}
	if requestCostPico() > reservationPico(body, pricedMaxTokens) {
		t.Fatal("a request costs more than it reserves: the overshoot bound would not hold")
	}
	yaml := pricedModelsYAML("127.0.0.1:1")
	if !strings.Contains(yaml, "input_cost_per_token: 0.00002\n") || !strings.Contains(yaml, "output_cost_per_token: 0.001\n") {
		t.Fatalf("priced alias:\n%s", yaml)
	}
	var req struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model != "priced" || req.MaxTokens != pricedMaxTokens {
		t.Fatalf("body %s: %+v %v", body, req, err)
	}
}

func TestIsBudgetRefusal(t *testing.T) {
	refusal := []byte(`{"error":{"message":"api key k has used $0.10 of its $0.10 monthly budget","type":"insufficient_quota","code":"budget_exceeded"}}`)
	if !isBudgetRefusal(429, refusal) {
		t.Error("a budget refusal was not recognised")
	}
	if isBudgetRefusal(429, []byte(`{"error":{"code":"rate_limit_exceeded"}}`)) || isBudgetRefusal(200, refusal) {
		t.Error("a rate limit or a 200 counted as a budget refusal")
	}
}

// TestDriveEach: each worker gets its own target.
func TestDriveEach(t *testing.T) {
	rec := &fakes.Recorder{}
	srv := httptest.NewServer(upstreamMuxWith(fakes.Options{}, rec))
	defer srv.Close()
	res := driveEach(context.Background(), newClient(2), func(w int) target {
		return target{url: srv.URL + "/openai/v1/chat/completions", header: bearer(fmt.Sprintf("key-%d", w)), body: chatBody("fake-gpt", false)}
	}, 2, 100*time.Millisecond)
	if res.requests == 0 || res.errors != 0 {
		t.Fatalf("requests %d, errors %d (%s)", res.requests, res.errors, res.firstErr)
	}
	seen := map[string]bool{}
	for _, r := range rec.Requests() {
		seen[r.Header.Get("Authorization")] = true
	}
	if !seen["Bearer key-0"] || !seen["Bearer key-1"] || len(seen) != 2 {
		t.Fatalf("keys seen upstream: %v", seen)
	}
}
