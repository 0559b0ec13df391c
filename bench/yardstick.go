package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// ysConfig is `go run ./bench -yardstick`: the third-party method the
// field publishes its figures by ("On the Bench": added latency at
// concurrency 1 against a direct call to the mock, sustained throughput
// against a 20 ms mock under p99 < 1 s and < 0.1 % errors, added time to
// first token, stall-free paced streams), with plain Caddy, Portkey and
// the gateway with the team controls on side by side, and the issue's
// goals judged as ratios from the one run. See docs/benchmarks.md.
type ysConfig struct {
	on bool

	c1Requests, c1Rounds int

	levels       []int // closed-loop workers of the sustained climb
	warmup, step time.Duration

	ttftConc     int
	ttftRounds   int
	ttftDuration time.Duration

	streamLevels []int

	limit time.Duration

	// pin puts the proxies on their own CPUs, as the field's harness does
	// (cpuPlan); cpus is the split when the run made it.
	pin  bool
	cpus *cpuPlan
}

// The field's criteria for sustained throughput, and the paced streams'.
const (
	sustainP99     = time.Second
	sustainErrFrac = 0.001
	// A climb stops once a level gains less than this over the best
	// before it: the proxy is saturated and more workers only queue.
	sustainMinGain = 1.05
	ysStreamDeltas = 64
	ysStreamPace   = 20 * time.Millisecond
)

func yardstickFlags() (yc *ysConfig, parse func() error) {
	yc = &ysConfig{}
	flag.BoolVar(&yc.on, "yardstick", false, "instead of the proxy scenarios: the field's yardstick (added p50/p99 at concurrency 1, sustained req/s against a 20 ms mock, added TTFT p99, stall-free streams) beside plain Caddy and Portkey, with the goals judged; about 6 minutes")
	flag.IntVar(&yc.c1Requests, "ys-c1-requests", 10000, "-yardstick: requests per row at concurrency 1")
	flag.IntVar(&yc.c1Rounds, "ys-c1-rounds", 10, "-yardstick: interleaved rounds the concurrency-1 requests are split into")
	levels := flag.String("ys-levels", "32,64,128,256,512", "-yardstick: workers of the sustained climb, in order")
	flag.DurationVar(&yc.warmup, "ys-warmup", 500*time.Millisecond, "-yardstick: unmeasured load before each sustained level")
	flag.DurationVar(&yc.step, "ys-step", 2*time.Second, "-yardstick: measured length of each sustained level")
	// One stream at a time, as OnTheBench times it: with more, a stream's
	// first event waits behind the others' deltas on the proxy's CPU, and
	// that queue, not the proxy's own delay, becomes the p99.
	flag.IntVar(&yc.ttftConc, "ys-ttft-concurrency", 1, "-yardstick: closed-loop workers of the time-to-first-token streams (1: one stream at a time, as the field's harness times them)")
	flag.IntVar(&yc.ttftRounds, "ys-ttft-rounds", 8, "-yardstick: interleaved rounds the time-to-first-token streams are split into")
	flag.DurationVar(&yc.ttftDuration, "ys-ttft-duration", 8*time.Second, "-yardstick: measured time-to-first-token streaming per row, split across -ys-ttft-rounds")
	streams := flag.String("ys-stream-levels", "128,256,512", "-yardstick: concurrent paced streams to climb through (64 deltas 20 ms apart; a stall is a gap over 200 ms)")
	flag.DurationVar(&yc.limit, "ys-limit", 10*time.Minute, "-yardstick: the whole run is stopped past this")
	flag.BoolVar(&yc.pin, "ys-pin", true, "-yardstick: pin the proxies to the upper half of the CPUs and the load generator, mocks, PostgreSQL and Redis to the rest, as the field's harness does (false: everything shares every CPU)")
	return yc, func() error {
		var err error
		if yc.levels, err = parseInts(*levels); err != nil {
			return fmt.Errorf("-ys-levels: %w", err)
		}
		if yc.streamLevels, err = parseInts(*streams); err != nil {
			return fmt.Errorf("-ys-stream-levels: %w", err)
		}
		if yc.c1Rounds < 1 || yc.c1Requests < yc.c1Rounds || yc.ttftConc < 1 || yc.ttftRounds < 1 || yc.step <= 0 || yc.ttftDuration <= 0 {
			return fmt.Errorf("-ys-c1-requests ≥ -ys-c1-rounds ≥ 1, -ys-ttft-concurrency and -ys-ttft-rounds ≥ 1, -ys-step and -ys-ttft-duration > 0")
		}
		return nil
	}
}

// ysTargets are the yardstick's rows for each metric.
type ysTargets struct {
	c1, load, ttft, streams []proxyTarget
}

// yardstickTargets lists every row: direct (the baseline), plain Caddy,
// the gateway passing chat through, the gateway with the team controls
// on (when PostgreSQL and Redis were given), the three translated client
// formats to a chat upstream, and Portkey (when it runs). c1 uses the
// instant mock, load the 20 ms one, ttft short stamped streams and
// streams the paced ones.
func (e *env) yardstickTargets() ysTargets {
	up := "http://" + e.upAddr
	gw := bearer(benchKey)
	var t ysTargets
	row := func(key, label string, proc *child, c1, load, ttft, streams *target) {
		for _, m := range []struct {
			list *[]proxyTarget
			t    *target
		}{{&t.c1, c1}, {&t.load, load}, {&t.ttft, ttft}, {&t.streams, streams}} {
			if m.t != nil {
				*m.list = append(*m.list, proxyTarget{key: key, label: label, proc: proc, req: *m.t})
			}
		}
	}
	direct := func(base, path, model string, stream, stamped bool) *target {
		return &target{url: base + "/" + path + "/v1/chat/completions", header: http2json(), body: chatBody(model, stream), stream: stream, stamped: stamped}
	}
	row("direct", "direct to the mock", nil,
		direct(up, "openai", "fake-gpt", false, false), direct(up, "slow", "fake-gpt", false, false),
		direct(up, "tf", "fake-stamped", true, true), direct(up, "ts", "fake-stamped", true, true))
	row("caddy", "plain Caddy reverse_proxy", e.caddy,
		direct(e.caddyBase, "openai", "fake-gpt", false, false), direct(e.caddyBase, "slow", "fake-gpt", false, false),
		direct(e.caddyBase, "tf", "fake-stamped", true, true), direct(e.caddyBase, "ts", "fake-stamped", true, true))
	gwChat := func(base string, h http.Header, model string, stream bool) *target {
		return &target{url: base + "/v1/chat/completions", header: h, body: chatBody(model, stream), stream: stream, stamped: stream}
	}
	row("gw-openai", "Modelgate openai/ (pass-through)", e.gw,
		gwChat(e.gwBase, gw, "oa", false), gwChat(e.gwBase, gw, "slow", false), gwChat(e.gwBase, gw, "tf", true), gwChat(e.gwBase, gw, "ts", true))
	// The firewall scans every request of a local entry (action log) by
	// default; this row has it off, to tell its cost from the rest.
	row("gw-unscanned", "Modelgate openai/ (pass-through), secret firewall off", e.gw,
		gwChat(e.gwBase, gw, "oa-unscanned", false), gwChat(e.gwBase, gw, "slow-unscanned", false), gwChat(e.gwBase, gw, "tf-unscanned", true), nil)
	if c := e.controls; c != nil {
		h := bearer(c.key)
		row("gw-controls", "Modelgate, team controls on", c.gw,
			gwChat(c.base, h, "priced", false), gwChat(c.base, h, "priced-slow", false), gwChat(c.base, h, "priced-tf", true), gwChat(c.base, h, "priced-ts", true))
	}
	messages := func(model string) *target {
		return &target{url: e.gwBase + "/v1/messages", header: anthropicHeader(benchKey), body: messagesBody(model, false)}
	}
	row("gw-messages", "Modelgate Anthropic Messages → chat upstream (translated)", e.gw, messages("oa"), messages("slow"), nil, nil)
	responses := func(model string) *target {
		return &target{url: e.gwBase + "/v1/responses", header: gw, body: responsesBody(model, false)}
	}
	row("gw-responses", "Modelgate Responses → chat upstream (translated)", e.gw, responses("oa"), responses("slow"), nil, nil)
	gemini := func(model string) *target {
		return &target{url: e.gwBase + "/v1beta/models/" + model + ":generateContent", header: gw, body: geminiBody(model)}
	}
	row("gw-gemini", "Modelgate Gemini API → chat upstream (translated)", e.gw, gemini("oa"), gemini("slow"), nil, nil)
	if e.pk != nil {
		pk := func(path, model string, stream bool) *target {
			return &target{url: e.pkBase + "/v1/chat/completions", header: portkeyHeader(up + "/" + path + "/v1"), body: chatBody(model, stream), stream: stream, stamped: stream}
		}
		row("portkey", "Portkey gateway (npm), openai chat", e.pk,
			pk("openai", "fake-gpt", false), pk("slow", "fake-gpt", false), pk("tf", "fake-stamped", true), pk("ts", "fake-stamped", true))
	}
	return t
}

// baselineKey marks a row of the -baseline binary.
const baselineKey = "@baseline"

// withBaseline adds the baseline's Modelgate rows to t, each after this
// binary's row of the same key: the goals are judged on this binary's
// rows, and the baseline's stand beside them.
func (t ysTargets) withBaseline(base ysTargets) ysTargets {
	merge := func(cur, old []proxyTarget) []proxyTarget {
		var out []proxyTarget
		for _, r := range cur {
			out = append(out, r)
			for _, b := range old {
				if b.key == r.key && strings.HasPrefix(r.key, "gw-") {
					b.key, b.label = b.key+baselineKey, b.label+", baseline binary"
					out = append(out, b)
				}
			}
		}
		return out
	}
	return ysTargets{c1: merge(t.c1, base.c1), load: merge(t.load, base.load), ttft: merge(t.ttft, base.ttft), streams: merge(t.streams, base.streams)}
}

// runYardstick starts the processes (the controlled gateway with the
// secret firewall and a spend limit on too), probes every row, then runs
// the four metrics and judges the goals, printing markdown to w.
func runYardstick(ctx context.Context, c config, yc ysConfig, w io.Writer) error {
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, yc.limit)
	defer cancel()
	raiseNoFile()
	c.chunks, c.gap = ysStreamDeltas, ysStreamPace
	c.only = regexp.MustCompile(`^gw-controls$`)
	c.teamSteps = true
	loadBefore := loadAverage()
	plan, pinned := planCPUs()
	pinned = pinned && yc.pin
	var services []string
	if pinned {
		restore, pinnedServices, err := pinHarness(plan, c)
		if err != nil {
			return err
		}
		defer restore()
		yc.cpus, services = &plan, pinnedServices
	}
	e, stop, err := startEnv(ctx, c)
	if err != nil {
		return err
	}
	defer stop()
	ts := e.yardstickTargets()
	if c.baseline != "" {
		// The baseline binary's gateway rows run in the same run,
		// interleaved with this binary's: on a shared machine two runs
		// minutes apart differ by more than most changes do.
		bc := c
		bc.caddyBin, bc.build, bc.portkey, bc.workdir = c.baseline, false, false, filepath.Join(e.workdir, "baseline")
		base, stopBase, err := startEnv(ctx, bc)
		if err != nil {
			return fmt.Errorf("-baseline: %w", err)
		}
		defer stopBase()
		ts = ts.withBaseline(base.yardstickTargets())
	}
	if pinned {
		if err := pinProxies(plan, ts); err != nil {
			return err
		}
	}
	// Every row must answer before anything is timed: a refused row would
	// otherwise time its error page. Portkey's streams fail on Node (its
	// open bug), which the streams table reports; they are not probed.
	for _, list := range [][]proxyTarget{ts.c1, ts.load} {
		for _, t := range list {
			if err := probeHTTP(http.MethodPost, t.req.url, t.req.header, t.req.body, "")(); err != nil {
				return fmt.Errorf("%s: %w", t.key, err)
			}
		}
	}
	fmt.Fprintf(w, "Machine: %s; load average before start-up %s.\n", machine(), loadBefore)
	if pinned {
		fmt.Fprintf(w, "\nCPUs: %s (-ys-pin=false shares them all).\n", plan.describe(services))
	} else {
		fmt.Fprintln(w, "\nCPUs: every process shares every CPU (not pinned).")
	}
	if e.pkSkipped != "" {
		fmt.Fprintf(w, "\nPortkey has no row: %s.\n", e.pkSkipped)
	}
	if e.controls == nil {
		fmt.Fprintln(w, "\nThe team-controls row is skipped: it needs -postgres and -redis.")
	} else {
		fmt.Fprintf(w, "\nTeam controls on: a PostgreSQL ledger, %d runtime keys created through the admin API, the load on one with a budget and Redis rpm/tpm/max_parallel limits it never reaches, an organization spend limit, and the secret firewall redacting requests and answers (off on the stamped streams: each of their deltas is one word with no whitespace, which the firewall holds back as it would a secret's start).\n", controlsKeys)
	}
	c1, err := measureC1(ctx, ts.c1, yc.c1Requests, yc.c1Rounds, time.Minute)
	if err != nil {
		return err
	}
	printC1(w, fieldConfig{c1Requests: yc.c1Requests, c1Rounds: yc.c1Rounds}, c1)
	load, err := measureSustained(ctx, ts.load, yc)
	if err != nil {
		return err
	}
	printSustained(w, yc, load)
	ttft, err := measureTTFT(ctx, ts.ttft, yc)
	if err != nil {
		return err
	}
	printTTFT(w, yc, ttft)
	fc := fieldConfig{streamDeltas: ysStreamDeltas, streamPace: ysStreamPace, streamLevels: yc.streamLevels, streamDials: 128}
	streams, err := measureStreams(ctx, ts.streams, fc)
	if err != nil {
		return err
	}
	printStreams(w, fc, streams)
	printGoals(w, judgeGoals(figuresOf(c1, load, ttft, streams), e.controls != nil, yc.streamLevels))
	if e.controls != nil {
		// A row whose controls fell back to counting in the process measured
		// less than the controls, and a ledger that fell behind (its queue
		// still deep, records dropped) did less work than a real one: the
		// table says how much of either.
		fmt.Fprintf(w, "\nTeam controls counted in the process instead of the shared stores, and the ledger's writer at the end: %s.\n", strings.Join(e.controls.fallbacks(), "; "))
	}
	fmt.Fprintf(w, "\nWhole run %s; load average at the end %s.\n", time.Since(began).Round(time.Second), loadAverage())
	return nil
}

// loadAverage is /proc/loadavg's three figures ("unknown" elsewhere).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// setOrganizationSpendLimit sets an organization spend limit (Anthropic's
// Spend Limits API) far above what a run spends, so every request is
// admitted against it as well as its key's budget.
func setOrganizationSpendLimit(ctx context.Context, client *http.Client, base string) error {
	body := []byte(`{"amount":"100000000","period":"monthly","scope":{"type":"organization"}}`)
	status, out, err := call(ctx, client, http.MethodPost, base+"/v1/organizations/spend_limits", overshootAdminKey, body)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("status %d: %.200s", status, out)
	}
	if err != nil {
		return fmt.Errorf("gw-controls: setting the organization spend limit: %w", err)
	}
	return nil
}

// withSecretFirewall turns the secret firewall on (redact) for every
// entry of a gateway Caddyfile: a local entry only logs by default, and
// the bench's upstreams are on loopback.
func withSecretFirewall(caddyfile string) string {
	return strings.Replace(caddyfile, "\tllm_gateway {\n", "\tllm_gateway {\n\t\tsecrets {\n\t\t\taction redact\n\t\t}\n", 1)
}
