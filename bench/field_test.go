package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

func TestFrontier(t *testing.T) {
	points := []sweepPoint{
		{conc: 1, rps: 2000, p99: 800 * time.Microsecond},
		{conc: 2, rps: 3500, p99: 1200 * time.Microsecond},
		{conc: 4, rps: 5000, p99: 4 * time.Millisecond},
		{conc: 8, rps: 9000, p99: 9 * time.Millisecond, errors: 3}, // errors: never qualifies
		{conc: 16, rps: 6000, p99: 9500 * time.Microsecond},        // past the knee: less, slower
		{conc: 32, rps: 6500, p99: 40 * time.Millisecond},
	}
	for _, tc := range []struct {
		bound    time.Duration
		wantConc int
		ok       bool
	}{
		{500 * time.Microsecond, 0, false},
		{time.Millisecond, 1, true},
		{5 * time.Millisecond, 4, true},
		{10 * time.Millisecond, 16, true},
		{50 * time.Millisecond, 32, true},
	} {
		got, ok := frontier(points, tc.bound)
		if ok != tc.ok || got.conc != tc.wantConc {
			t.Errorf("frontier(≤ %s) = %d workers, %v; want %d, %v", tc.bound, got.conc, ok, tc.wantConc, tc.ok)
		}
	}
	// The bound is inclusive.
	if got, ok := frontier(points, 4*time.Millisecond); !ok || got.conc != 4 {
		t.Errorf("frontier(≤ 4ms) = %d, %v; want the 4-worker point", got.conc, ok)
	}
	if _, ok := frontier(nil, time.Second); ok {
		t.Error("an empty sweep has a frontier")
	}
}

func TestGapTracker(t *testing.T) {
	var g gapTracker
	t0 := time.Unix(1, 0)
	// The wait for the first delta is TTFB, not a stall.
	for _, at := range []time.Duration{time.Second, time.Second + 20*time.Millisecond, time.Second + 250*time.Millisecond, time.Second + 270*time.Millisecond} {
		g.see(t0.Add(at))
	}
	if g.frames != 4 || g.maxGap != 230*time.Millisecond {
		t.Fatalf("gapTracker = %d frames, max gap %s; want 4, 230ms", g.frames, g.maxGap)
	}
}

func TestJudgeLevel(t *testing.T) {
	const deltas, stall = 4, 200 * time.Millisecond
	good := streamOutcome{frames: deltas, bytes: deltas * stampDigits, done: true, maxGap: 25 * time.Millisecond}
	l := judgeLevel([]streamOutcome{good, good}, deltas, stampDigits, stall)
	if !l.ok() || l.worstGap != 25*time.Millisecond {
		t.Fatalf("two clean streams judged %+v", l)
	}
	stalled := good
	stalled.maxGap = 201 * time.Millisecond
	short := good
	short.frames, short.bytes = deltas-1, (deltas-1)*stampDigits
	noDone := good
	noDone.done = false
	torn := good
	torn.bytes-- // a frame cut inside its content
	failed := streamOutcome{err: errors.New("status 500")}
	l = judgeLevel([]streamOutcome{good, stalled, short, noDone, torn, failed}, deltas, stampDigits, stall)
	if l.ok() || l.stalled != 1 || l.lost != 4 || l.worstGap != 201*time.Millisecond || l.streams != 6 {
		t.Fatalf("judged %+v; want 1 stalled, 4 lost, worst gap 201ms", l)
	}
	if !strings.Contains(l.firstErr, "3 of 4 deltas") {
		t.Errorf("first loss %q does not say what was missing", l.firstErr)
	}
	// Exactly the bound is not a stall.
	edge := good
	edge.maxGap = stall
	if l := judgeLevel([]streamOutcome{edge}, deltas, stampDigits, stall); !l.ok() {
		t.Errorf("a gap of exactly the bound judged a stall: %+v", l)
	}
	if (levelResult{}).ok() {
		t.Error("a level with no streams passed")
	}
}

func TestSustained(t *testing.T) {
	pass, fail := levelResult{streams: 1}, levelResult{streams: 1, stalled: 1}
	for _, tc := range []struct {
		judged []levelResult
		want   int
	}{
		{[]levelResult{pass, pass, fail}, 32},
		{[]levelResult{fail}, 0},
		{[]levelResult{pass, pass, pass}, 64},
	} {
		s := streamsResult{levels: []int{16, 32, 64}[:len(tc.judged)], judged: tc.judged}
		if got := s.sustained(); got != tc.want {
			t.Errorf("sustained(%v) = %d, want %d", tc.judged, got, tc.want)
		}
	}
}

func TestReadPaced(t *testing.T) {
	body := `data: {"choices":[{"index":0,"delta":{"content":"1730000000123456789"},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":"1730000000123456790"},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	o := readPaced(strings.NewReader(body))
	if o.frames != 2 || o.bytes != 2*stampDigits || !o.done || o.err != nil {
		t.Fatalf("readPaced = %+v; want 2 frames, %d bytes, done", o, 2*stampDigits)
	}
	cut := readPaced(strings.NewReader(body[:strings.Index(body, "data: [DONE]")]))
	if cut.done || cut.frames != 2 {
		t.Fatalf("a stream without [DONE] read as %+v", cut)
	}
}

func TestGrowthRate(t *testing.T) {
	load := 4 * time.Minute
	var linear, flat []rssSample
	for s := 0; s <= 240; s += 10 {
		at := time.Duration(s) * time.Second
		// Warm-up growth in the first quarter must not count.
		warm := 0.0
		if at < time.Minute {
			warm = float64(60-s) * 2
		}
		linear = append(linear, rssSample{at: at, rssMB: 100 + 1.5*at.Minutes() + warm})
		flat = append(flat, rssSample{at: at, rssMB: 80 - warm})
	}
	if got := growthRate(linear, load); math.Abs(got-1.5) > 1e-9 {
		t.Errorf("growthRate(linear) = %v MiB/min, want 1.5", got)
	}
	if got := growthRate(flat, load); math.Abs(got) > 1e-9 {
		t.Errorf("growthRate(flat after warm-up) = %v MiB/min, want 0", got)
	}
	if got := growthRate(linear[:1], load); !math.IsNaN(got) {
		t.Errorf("growthRate of one sample = %v, want NaN", got)
	}
	med, peak := steadyStats(linear, load)
	if med != 100+1.5*2.5 || peak != 100+1.5*4 {
		t.Errorf("steadyStats = %v, %v; want the steady phase's median and top", med, peak)
	}
}

func TestGivenBack(t *testing.T) {
	if got := givenBack(50, 90, 60); got != 75 {
		t.Errorf("givenBack(50, 90, 60) = %v%%, want 75%%", got)
	}
	if got := givenBack(50, 50, 50); !math.IsNaN(got) {
		t.Errorf("givenBack with no growth = %v, want NaN", got)
	}
}

func TestParseInts(t *testing.T) {
	got, err := parseInts("1, 2,4")
	if err != nil || len(got) != 3 || got[2] != 4 {
		t.Fatalf("parseInts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "-1", "x"} {
		if _, err := parseInts(bad); err == nil {
			t.Errorf("parseInts(%q) accepted", bad)
		}
	}
}

func TestMessagesBody(t *testing.T) {
	var m struct {
		Model     string `json:"model"`
		System    string `json:"system"`
		MaxTokens int    `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		Messages  []struct {
			Role    string `json:"role"`
			Content []struct {
				Type, Text string
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(messagesBody("oa", false), &m); err != nil {
		t.Fatal(err)
	}
	if m.Model != "oa" || m.MaxTokens != 512 || m.Stream || !strings.HasPrefix(m.System, "You are the platform team's assistant") {
		t.Fatalf("messagesBody = %+v", m)
	}
	if len(m.Messages) != 3 || m.Messages[0].Role != "user" || m.Messages[1].Role != "assistant" || m.Messages[2].Content[0].Type != "text" {
		t.Fatalf("messagesBody turns = %+v", m.Messages)
	}
}

// TestRunStreams runs paced streams against the stamped upstream: every
// one arrives whole, open at once, without a stall.
func TestRunStreams(t *testing.T) {
	srv := httptest.NewServer(upstreamMux(fakes.Options{Chunks: 6, Gap: 5 * time.Millisecond}))
	defer srv.Close()
	tg := target{url: srv.URL + "/ts/v1/chat/completions", header: http2json(), body: chatBody("fake-stamped", true), stream: true, stamped: true}
	outs, peak := runStreams(context.Background(), tg, 8, 4, 10*time.Second)
	l := judgeLevel(outs, 6, stampDigits, 200*time.Millisecond)
	if !l.ok() || l.streams != 8 {
		t.Fatalf("8 paced streams judged %+v", l)
	}
	if peak < 2 || peak > 8 {
		t.Fatalf("peak open %d, want between 2 and 8", peak)
	}
	// A stream the upstream refuses is lost, not passed.
	bad := tg
	bad.url = srv.URL + "/nowhere"
	outs, _ = runStreams(context.Background(), bad, 2, 2, 10*time.Second)
	if l := judgeLevel(outs, 6, stampDigits, 200*time.Millisecond); l.ok() || l.lost != 2 {
		t.Fatalf("refused streams judged %+v", l)
	}
}

// TestMeasureC1 times sequential requests to two targets in rounds and
// derives the added p99 from the direct one.
func TestMeasureC1(t *testing.T) {
	srv := httptest.NewServer(upstreamMux(fakes.Options{}))
	defer srv.Close()
	direct := proxyTarget{key: "direct", req: target{url: srv.URL + "/openai/v1/chat/completions", header: http2json(), body: chatBody("fake-gpt", false)}}
	other := direct
	other.key = "other"
	res, err := measureC1(context.Background(), []proxyTarget{direct, other}, 60, 3, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if len(r.lat) != 60 || r.errors != 0 {
			t.Fatalf("%s: %d latencies, %d errors (%s); want 60, 0", r.key, len(r.lat), r.errors, r.firstErr)
		}
	}
	if got, want := addedP99(res[1].lat, res[0].lat), pct(res[1].lat, .99)-pct(res[0].lat, .99); got != want {
		t.Fatalf("addedP99 = %v, want %v", got, want)
	}
}

// The field metrics run with -only unset: the optional gateways must stay
// down rather than consult a nil regexp (a panic before any proxy started).
func TestFieldStartsNoOptionalGateway(t *testing.T) {
	e := &env{cfg: config{postgres: "postgres://unused", redis: "redis://unused"}}
	if err := e.startControls(context.Background(), "/nonexistent"); err != nil {
		t.Fatalf("startControls: %v", err)
	}
	if err := e.startTraced(context.Background(), "/nonexistent"); err != nil {
		t.Fatalf("startTraced: %v", err)
	}
	if e.controls != nil || e.traced != nil {
		t.Fatalf("an optional gateway started for the field metrics: controls %v, traced %v", e.controls, e.traced)
	}
	if (config{}).selects("caddy") {
		t.Fatal("an unset -only selects a scenario")
	}
}
