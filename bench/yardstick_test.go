package main

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

func TestSustainedBest(t *testing.T) {
	points := []loadPoint{
		{conc: 32, rps: 1500, p99: 25 * time.Millisecond, requests: 3000},
		{conc: 64, rps: 2900, p99: 40 * time.Millisecond, requests: 5800, errors: 5},  // 0.086 %: within
		{conc: 128, rps: 3400, p99: 90 * time.Millisecond, requests: 6800, errors: 7}, // 0.103 %: over
		{conc: 256, rps: 3600, p99: time.Second, requests: 7200},                      // p99 must be under 1 s
		{conc: 512, rps: 0, p99: 0, requests: 0},                                      // nothing completed
	}
	best, ok := sustainedBest(points)
	if !ok || best.conc != 64 {
		t.Fatalf("sustainedBest = %d workers, %v; want 64, true", best.conc, ok)
	}
	if _, ok := sustainedBest(points[2:]); ok {
		t.Fatal("levels that all break the criteria have a sustained figure")
	}
}

func TestClimbDone(t *testing.T) {
	ok := func(conc int, rps float64) loadPoint {
		return loadPoint{conc: conc, rps: rps, p99: 50 * time.Millisecond, requests: 1000}
	}
	for _, tc := range []struct {
		name   string
		points []loadPoint
		done   bool
	}{
		{"nothing measured", nil, false},
		{"one good level", []loadPoint{ok(32, 1000)}, false},
		{"still gaining", []loadPoint{ok(32, 1000), ok(64, 1900)}, false},
		{"one flat level", []loadPoint{ok(32, 1000), ok(64, 1900), ok(128, 1950)}, false},
		{"one level fell back", []loadPoint{ok(32, 1000), ok(64, 800)}, false},
		{"saturated", []loadPoint{ok(32, 1000), ok(64, 1900), ok(128, 1950), ok(256, 1800)}, true},
		{"flat, then gaining", []loadPoint{ok(32, 1000), ok(64, 1000), ok(128, 2000)}, false},
		{"broke the criteria", []loadPoint{ok(32, 1000), {conc: 64, rps: 3000, p99: 2 * time.Second, requests: 1000}}, true},
	} {
		if got := climbDone(tc.points); got != tc.done {
			t.Errorf("%s: climbDone = %v, want %v", tc.name, got, tc.done)
		}
	}
}

// figures where every goal is met, and the verdicts as each one moves.
func TestJudgeGoals(t *testing.T) {
	good := func() ysFigures {
		return ysFigures{
			sustained: map[string]float64{"caddy": 3000, "gw-openai": 3100, "gw-controls": 3000, "gw-responses": 2900, "gw-gemini": 2850, "gw-messages": 3000},
			addedP99:  map[string]time.Duration{"caddy": 1000 * time.Microsecond, "gw-openai": 1100 * time.Microsecond, "gw-controls": 900 * time.Microsecond},
			addedTTFT: map[string]time.Duration{"caddy": 200 * time.Microsecond, "gw-openai": 300 * time.Microsecond, "gw-controls": 250 * time.Microsecond},
			streams:   map[string]int{"gw-openai": 512, "gw-controls": 512},
		}
	}
	levels := []int{128, 256, 512}
	verdicts := func(gs []goal) map[string]string {
		m := map[string]string{}
		for _, g := range gs {
			m[g.name] = g.verdict
		}
		return m
	}
	all := judgeGoals(good(), true, levels)
	if len(all) != 10 {
		t.Fatalf("%d goals, want 10: %+v", len(all), all)
	}
	for _, g := range all {
		if g.verdict != "met" {
			t.Errorf("%s: %s (%s), want met", g.name, g.verdict, g.measured)
		}
	}

	f := good()
	f.sustained["gw-controls"] = 2990
	f.sustained["gw-gemini"] = 2840 // 0.947×
	f.addedP99["gw-openai"] = 1101 * time.Microsecond
	f.addedTTFT["gw-controls"] = 301 * time.Microsecond
	f.streams["gw-openai"] = 256
	got := verdicts(judgeGoals(f, true, levels))
	for name, want := range map[string]string{
		"team controls on: sustained req/s ≥ 1.00× plain Caddy's":                 "missed",
		"Gemini translated: sustained req/s ≥ 0.95× plain Caddy's":                "missed",
		"Responses translated: sustained req/s ≥ 0.95× plain Caddy's":             "met",
		"pass-through: added p99 at concurrency 1 within 10 % of Caddy's own":     "missed",
		"team controls on: added p99 at concurrency 1 within 10 % of Caddy's own": "met",
		"team controls on: added TTFT p99 ≤ 300 µs":                               "missed",
		"pass-through: 512 stall-free paced streams":                              "missed",
		"team controls on: 512 stall-free paced streams":                          "met",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}

	// Caddy's own added p99 below zero (a noisy run): the slack is taken on
	// its size, so a row at Caddy's figure still meets the goal.
	f = good()
	f.addedP99["caddy"], f.addedP99["gw-openai"] = -100*time.Microsecond, -95*time.Microsecond
	if v := verdicts(judgeGoals(f, true, levels))["pass-through: added p99 at concurrency 1 within 10 % of Caddy's own"]; v != "met" {
		t.Errorf("negative Caddy figure: %q, want met", v)
	}

	// Without PostgreSQL and Redis the controls goals say so; without 512 in
	// the levels the streams goal is not judged; Caddy meeting no level
	// leaves the ratios unjudged rather than divided by zero.
	f = good()
	delete(f.sustained, "gw-controls")
	f.sustained["caddy"] = 0
	got = verdicts(judgeGoals(f, false, []int{128, 256}))
	if v := got["team controls on: sustained req/s ≥ 1.00× plain Caddy's"]; !strings.Contains(v, "-postgres") {
		t.Errorf("controls without PostgreSQL: %q", v)
	}
	if v := got["pass-through: 512 stall-free paced streams"]; !strings.HasPrefix(v, "not judged") {
		t.Errorf("levels below 512: %q", v)
	}
	if v := got["Messages translated: sustained req/s ≥ 0.95× plain Caddy's"]; v != "not judged" {
		t.Errorf("Caddy at no level: %q", v)
	}
}

func TestYardstickTargets(t *testing.T) {
	e := &env{upAddr: "127.0.0.1:1", caddy: &child{}, gw: &child{}, caddyBase: "http://127.0.0.1:2", gwBase: "http://127.0.0.1:3"}
	keys := func(ts []proxyTarget) string {
		var k []string
		for _, t := range ts {
			k = append(k, t.key)
		}
		return strings.Join(k, ",")
	}
	ts := e.yardstickTargets()
	if got, want := keys(ts.load), "direct,caddy,gw-openai,gw-unscanned,gw-messages,gw-responses,gw-gemini"; got != want {
		t.Fatalf("load rows %s, want %s", got, want)
	}
	if got, want := keys(ts.streams), "direct,caddy,gw-openai"; got != want {
		t.Fatalf("stream rows %s, want %s", got, want)
	}
	e.controls = &controlsEnv{gw: &child{}, base: "http://127.0.0.1:4", key: "sk-loaded"}
	e.pk, e.pkBase = &child{}, "http://127.0.0.1:5"
	ts = e.yardstickTargets()
	if got, want := keys(ts.c1), "direct,caddy,gw-openai,gw-unscanned,gw-controls,gw-messages,gw-responses,gw-gemini,portkey"; got != want {
		t.Fatalf("c1 rows %s, want %s", got, want)
	}
	if got, want := keys(ts.ttft), "direct,caddy,gw-openai,gw-unscanned,gw-controls,portkey"; got != want {
		t.Fatalf("ttft rows %s, want %s", got, want)
	}
	for _, tc := range []struct {
		list []proxyTarget
		path string
	}{{ts.load, "/slow/"}, {ts.ttft, "/tf/"}, {ts.streams, "/ts/"}} {
		for _, r := range tc.list {
			switch r.key {
			case "direct", "caddy":
				if !strings.Contains(r.req.url, tc.path) {
					t.Errorf("%s goes to %s, want the %s mock", r.key, r.req.url, tc.path)
				}
			case "portkey":
				if h := r.req.header.Get("X-Portkey-Custom-Host"); !strings.Contains(h, tc.path) {
					t.Errorf("portkey goes to %s, want the %s mock", h, tc.path)
				}
			case "gw-controls":
				if r.req.header.Get("Authorization") != "Bearer sk-loaded" || !strings.Contains(string(r.req.body), `"priced-`) {
					t.Errorf("controls row: %v %s", r.req.header, r.req.body[:60])
				}
			}
		}
	}
}

func TestWithSecretFirewall(t *testing.T) {
	cf := withSecretFirewall(budgetCaddyfile(1, 2, "/m.yaml", true))
	i, j := strings.Index(cf, "llm_gateway {"), strings.Index(cf, "secrets {\n\t\t\taction redact\n\t\t}")
	if i < 0 || j < i || !strings.Contains(cf[i:], "models /m.yaml") {
		t.Fatalf("the firewall is not in the llm_gateway block:\n%s", cf)
	}
	// Only the priced stamped streams change; the -unscanned entries are
	// off in both.
	off := `secrets: {action: "off"}`
	if n := strings.Count(controlsModelsYAML("up", true), off) - strings.Count(controlsModelsYAML("up", false), off); n != 2 {
		t.Fatalf("%d more entries unscanned with the team steps, want 2 (priced-ts, priced-tf)", n)
	}
}

// The yardstick's mocks answer on the upstream: the 20 ms one as the
// OpenAI fake, the short stream with ttftChunks stamped deltas.
func TestYardstickMocks(t *testing.T) {
	srv := httptest.NewServer(upstreamMux(fakes.Options{Chunks: 64}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/slow/v1/chat/completions", "application/json", strings.NewReader(string(chatBody("fake-gpt", false))))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	if sc := bufio.NewScanner(resp.Body); sc.Scan() {
		line = sc.Text()
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(line, "chatcmpl-fake") {
		t.Fatalf("slow mock: status %d, %q", resp.StatusCode, line)
	}
	resp, err = http.Post(srv.URL+"/tf/v1/chat/completions", "application/json", strings.NewReader(string(chatBody("fake-stamped", true))))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	o := readPaced(resp.Body)
	if o.err != nil || !o.done || o.frames != ttftChunks {
		t.Fatalf("short stream: %d deltas, [DONE] %v, %v; want %d", o.frames, o.done, o.err, ttftChunks)
	}
}

// TestYardstickBaselineRowsFollowTheirs: a -baseline run puts the
// baseline's Modelgate rows right after this binary's, under their own
// keys, and adds no second direct or Caddy row.
func TestYardstickBaselineRowsFollowTheirs(t *testing.T) {
	rows := func(keys ...string) []proxyTarget {
		var out []proxyTarget
		for _, k := range keys {
			out = append(out, proxyTarget{key: k, label: k})
		}
		return out
	}
	cur := ysTargets{c1: rows("direct", "caddy", "gw-openai", "gw-controls"), load: rows("direct", "caddy", "gw-responses")}
	base := ysTargets{c1: rows("direct", "caddy", "gw-openai", "gw-controls"), load: rows("direct", "caddy", "gw-responses")}
	got := cur.withBaseline(base)
	var keys []string
	for _, r := range got.c1 {
		keys = append(keys, r.key)
	}
	if want := "direct caddy gw-openai gw-openai@baseline gw-controls gw-controls@baseline"; strings.Join(keys, " ") != want {
		t.Fatalf("c1 rows %q, want %q", keys, want)
	}
	if len(got.load) != 4 || got.load[3].key != "gw-responses@baseline" || !strings.HasSuffix(got.load[3].label, "baseline binary") {
		t.Fatalf("load rows %+v", got.load)
	}
}
