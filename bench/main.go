// Command bench measures Modelgate against its floor, Caddy's own
// reverse_proxy to the same upstream, on this machine, in one run.
//
// From the repository root:
//
//	go run ./bench
//
// It builds ./cmd/caddy, starts a fake upstream (this program again, in
// -upstream mode, so its CPU is not charged to what is measured), a
// gateway on a Caddyfile with the ledger on, and plain Caddy; drives each
// with a closed-loop load generator; and prints one markdown table with
// ratios to plain Caddy. Everything listens on loopback and everything it
// starts is stopped when it ends, on Ctrl-C too. See docs/benchmarks.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

type config struct {
	duration, warmup time.Duration
	conc, streamConc int
	chunks           int
	gap              time.Duration
	idle             int
	rounds           int
	caddyBin         string
	// baseline is an earlier caddy binary whose scenarios run interleaved
	// with caddyBin's, in the same run ("" none).
	baseline   string
	build      bool
	portkey    bool
	workdir    string
	durability string
	only       *regexp.Regexp
	profile    *regexp.Regexp
	// postgres and redis: the gw-controls scenarios' ledger and limits.
	postgres, redis string
	// teamSteps turns on the newer steps in the controlled gateway too:
	// the secret firewall (redact) and an organization spend limit.
	teamSteps bool
}

// selects reports whether -only picks the scenario key. The field metrics
// leave only unset: they start just the proxies they compare, none of the
// optional gateways (controls, traced).
func (c config) selects(key string) bool {
	return c.only != nil && c.only.MatchString(key)
}

func main() {
	upstream := flag.Bool("upstream", false, "internal: serve the fake upstreams (the harness starts itself this way)")
	listen := flag.String("listen", "127.0.0.1:0", "internal: -upstream listen address")
	var c config
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "measured length of each scenario")
	flag.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured load before each scenario (connections, caches)")
	flag.IntVar(&c.conc, "concurrency", 64, "closed-loop workers for request/response scenarios")
	flag.IntVar(&c.streamConc, "stream-concurrency", 16, "closed-loop workers for streaming scenarios")
	flag.IntVar(&c.chunks, "chunks", 20, "content chunks per streamed answer")
	flag.DurationVar(&c.gap, "gap", 5*time.Millisecond, "upstream pause between streamed chunks")
	flag.IntVar(&c.idle, "idle-streams", 5000, "concurrent idle streams to hold (0 skips)")
	flag.IntVar(&c.rounds, "rounds", 1, "run every scenario this many times, interleaved, and report each one's median round by throughput (for shared, noisy machines)")
	flag.StringVar(&c.caddyBin, "caddy", ".cache/bin/caddy", "caddy binary with Modelgate")
	flag.StringVar(&c.baseline, "baseline", "", "an earlier caddy binary (e.g. built from the commit before a change): every selected scenario also runs on it, interleaved round by round with -caddy's, and both are reported, so before and after share one run's machine state; with -yardstick, its Modelgate rows run beside this binary's")
	flag.BoolVar(&c.build, "build", true, "go build ./cmd/caddy into -caddy first (run from the repository root)")
	flag.BoolVar(&c.portkey, "portkey", false, "also measure @portkey-ai/gateway, installed from npm into .cache/portkey")
	flag.BoolVar(&c.teamSteps, "team-steps", false, "gw-controls as the yardstick runs it: the secret firewall redacting and an organization spend limit too (so -profile can see the yardstick's controlled gateway)")
	flag.StringVar(&c.durability, "durability", "async", "the gateway's ledger durability: async (batched) or sync (each record written before its answer completes)")
	flag.StringVar(&c.workdir, "workdir", "", "keep Caddyfiles, ledger and profiles here (default: a temporary directory, removed)")
	only := flag.String("only", "", "regexp: run only scenarios whose key matches (keys: see -list)")
	profile := flag.String("profile", "", "regexp: CPU-profile the proxy during matching scenarios into <workdir>/<key>.pprof")
	list := flag.Bool("list", false, "print the scenario keys and exit")
	sched := flag.String("sched", "", "instead of the proxy scenarios: read a Go execution trace of a proxy (its /debug/pprof/trace?seconds=N) and say where its goroutines waited to run, and what held the processor meanwhile")
	reports := flag.Bool("reports", false, "instead of the proxy scenarios: seed a ledger and time the dashboard's reports")
	var rc reportsConfig
	flag.IntVar(&rc.records, "records", 5_000_000, "-reports: records to seed over 90 days")
	flag.IntVar(&rc.runs, "report-runs", 20, "-reports: timed runs of each report")
	flag.StringVar(&rc.postgres, "postgres", os.Getenv("MODELGATE_TEST_POSTGRES"), "-reports: also a PostgreSQL DSN (an empty database); -overshoot: the shared ledger, a schema per measurement (default $MODELGATE_TEST_POSTGRES)")
	overshootMode := flag.Bool("overshoot", false, "instead of the proxy scenarios: budget overshoot of several instances on one PostgreSQL and Redis, and what shared reservations cost")
	var oc overshootConfig
	instances := flag.String("instances", "1,2,4", "-overshoot: gateway instance counts to measure")
	flag.IntVar(&oc.keys, "keys", 1000, "-overshoot: keys, each with its own budget")
	flag.IntVar(&oc.spenders, "spenders", 128, "-overshoot: concurrent spenders")
	flag.IntVar(&oc.perKey, "spenders-per-key", 8, "-overshoot: spenders on one key at a time, spread over the instances")
	flag.IntVar(&oc.budgetCents, "budget-cents", 10, "-overshoot: each key's monthly budget, in cents")
	flag.StringVar(&oc.redis, "redis", os.Getenv("MODELGATE_TEST_REDIS"), "-overshoot: Redis URL for shared rate limits (default $MODELGATE_TEST_REDIS; empty: none)")
	flag.StringVar(&oc.label, "label", "shared", "-overshoot: the reservations column of the table (e.g. per-process, for an older -caddy binary)")
	fc, parseField := fieldFlags()
	yc, parseYardstick := yardstickFlags()
	flag.Parse()
	c.postgres, c.redis = rc.postgres, oc.redis
	if *overshootMode {
		var err error
		if oc.instances, err = parseInstances(*instances); err != nil {
			fatal(err)
		}
		oc.postgres, oc.caddyBin, oc.build, oc.workdir = rc.postgres, c.caddyBin, c.build, c.workdir
		oc.duration, oc.warmup, oc.conc = c.duration, c.warmup, c.conc
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := runOvershoot(ctx, oc); err != nil {
			stop()
			fatal(err)
		}
		return
	}
	if *sched != "" {
		f, err := os.Open(*sched)
		if err != nil {
			fatal(err)
		}
		defer f.Close()
		if err := schedReport(f, os.Stdout); err != nil {
			fatal(fmt.Errorf("-sched: %w", err))
		}
		return
	}
	if *reports {
		rc.workdir = c.workdir
		if err := runReports(context.Background(), rc); err != nil {
			fatal(err)
		}
		return
	}

	if *upstream {
		if err := runUpstream(*listen, fakes.Options{Chunks: c.chunks, Gap: c.gap}); err != nil {
			fmt.Fprintln(os.Stderr, "upstream:", err)
			os.Exit(1)
		}
		return
	}
	if *list {
		for _, s := range scenarioKeys() {
			fmt.Println(s)
		}
		return
	}
	if yc.on {
		if err := parseYardstick(); err != nil {
			fatal(err)
		}
		// Portkey is one of the yardstick's rows unless -portkey=false says not.
		portkeySet := false
		flag.Visit(func(f *flag.Flag) { portkeySet = portkeySet || f.Name == "portkey" })
		c.portkey = c.portkey || !portkeySet
		untilSignal(func(ctx context.Context) error { return runYardstick(ctx, c, *yc, os.Stdout) })
		return
	}
	if fc.on {
		if err := parseField(); err != nil {
			fatal(err)
		}
		untilSignal(func(ctx context.Context) error { return runField(ctx, c, *fc, os.Stdout) })
		return
	}
	var err error
	if c.only, err = regexp.Compile(*only); err != nil {
		fatal(fmt.Errorf("-only: %w", err))
	}
	if *profile != "" {
		if c.profile, err = regexp.Compile(*profile); err != nil {
			fatal(fmt.Errorf("-profile: %w", err))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		stop()
		fatal(err)
	}
}

// untilSignal runs a mode with a context that Ctrl-C or SIGTERM cancels,
// so everything it started is stopped; an error ends the program.
func untilSignal(run func(context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		stop()
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

// env is everything one run started.
type env struct {
	cfg                 config
	upAddr              string
	up, gw, caddy, pk   *child
	gwBase, caddyBase   string
	pkBase              string
	pkSkipped           string // why Portkey did not start, when asked for
	gwAdmin, caddyAdmin string
	workdir             string
	controls            *controlsEnv
	traced              *tracedEnv
}

// startEnv makes the working directory, builds the binary when asked and
// starts every process the scenarios use; stop ends them and removes a
// temporary directory.
func startEnv(ctx context.Context, c config) (e *env, stop func(), err error) {
	e = &env{cfg: c}
	var removeDir bool
	if c.workdir != "" {
		if e.workdir, err = filepath.Abs(c.workdir); err == nil {
			err = os.MkdirAll(e.workdir, 0o700)
		}
	} else {
		e.workdir, err = os.MkdirTemp("", "modelgate-bench-")
		removeDir = err == nil
	}
	stop = func() {
		e.stopAll()
		if removeDir {
			os.RemoveAll(e.workdir)
		}
	}
	if err == nil && c.build {
		err = buildCaddy(ctx, c.caddyBin)
	}
	var bin string
	if err == nil {
		bin, err = filepath.Abs(c.caddyBin)
	}
	if err == nil {
		err = e.startAll(ctx, bin)
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	return e, stop, nil
}

func run(ctx context.Context, c config) (err error) {
	nofile := raiseNoFile()
	if c.idle > 0 && nofile < uint64(3*c.idle+1024) {
		fmt.Fprintf(os.Stderr, "bench: open-file limit %d is too low for %d idle streams; holding %d\n", nofile, c.idle, (int(nofile)-1024)/3)
		c.idle = max(0, (int(nofile)-1024)/3)
	}
	e, stop, err := startEnv(ctx, c)
	if err != nil {
		return err
	}
	defer stop()
	// The baseline's processes live in a directory of their own and are
	// driven between the current binary's, round by round: on a shared
	// machine two separate runs differ by more than most changes do.
	var base *env
	if c.baseline != "" {
		bc := c
		bc.caddyBin, bc.build, bc.portkey, bc.workdir = c.baseline, false, false, filepath.Join(e.workdir, "baseline")
		var stopBase func()
		if base, stopBase, err = startEnv(ctx, bc); err != nil {
			return fmt.Errorf("-baseline: %w", err)
		}
		defer stopBase()
	}
	var rounds, baseRounds []*report
	for i := 0; i < max(1, c.rounds); i++ {
		last := i == max(1, c.rounds)-1
		if base != nil {
			rep := &report{cfg: base.cfg}
			if err := base.scenarios(ctx, rep, false); err != nil {
				return err
			}
			baseRounds = append(baseRounds, rep)
		}
		rep := &report{cfg: c}
		// Idle streams only in the last round: the memory they leave with
		// the proxy would inflate the next round's RSS column.
		if err := e.scenarios(ctx, rep, last); err != nil {
			return err
		}
		rounds = append(rounds, rep)
	}
	if base != nil {
		fmt.Printf("## Baseline: %s\n\n", c.baseline)
		medianRound(baseRounds).print(os.Stdout)
		fmt.Printf("\n## Current: %s\n\n", c.caddyBin)
	}
	medianRound(rounds).print(os.Stdout)
	return nil
}

// buildCaddy builds ./cmd/caddy into path.
func buildCaddy(ctx context.Context, path string) error {
	fmt.Fprintln(os.Stderr, "building", path, "…")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", path, "./cmd/caddy")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building caddy (run from the repository root, or pass -build=false -caddy PATH): %w", err)
	}
	return nil
}

func (e *env) startAll(ctx context.Context, bin string) error {
	var err error
	e.up, e.upAddr, err = startUpstream(e.cfg.chunks, e.cfg.gap)
	if err != nil {
		return err
	}
	gwDir := filepath.Join(e.workdir, "gateway")
	if err := os.MkdirAll(gwDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(gwDir, "models.yaml"), []byte(modelsYAML(e.upAddr)), 0o600); err != nil {
		return err
	}
	// A port freePort found may be taken by someone else before Caddy
	// binds it; then Caddy exits and a new pair of ports is tried.
	for try := 0; ; try++ {
		port, admin, err := freePorts()
		if err != nil {
			return err
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		probe := probeHTTP(http.MethodGet, base+"/health/readiness", nil, nil, `"deployments":11`)
		e.gw, err = startCaddy(ctx, "gateway", bin, gwDir, gatewayCaddyfile(gwDir, port, admin, e.cfg.durability), probe, []string{"BENCH_KEY=" + benchKey})
		if err == nil {
			e.gwBase, e.gwAdmin = base, fmt.Sprintf("127.0.0.1:%d", admin)
			break
		}
		if try == 2 || ctx.Err() != nil {
			return err
		}
	}
	for try := 0; ; try++ {
		port, admin, err := freePorts()
		if err != nil {
			return err
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		probe := probeHTTP(http.MethodPost, base+"/openai/v1/chat/completions", http2json(), chatBody("fake-gpt", false), "chatcmpl-fake")
		e.caddy, err = startCaddy(ctx, "caddy", bin, filepath.Join(e.workdir, "caddy"), caddyfilePlain(e.upAddr, port, admin), probe, nil)
		if err == nil {
			e.caddyBase, e.caddyAdmin = base, fmt.Sprintf("127.0.0.1:%d", admin)
			break
		}
		if try == 2 || ctx.Err() != nil {
			return err
		}
	}
	if err := e.startControls(ctx, bin); err != nil {
		return err
	}
	if err := e.startTraced(ctx, bin); err != nil {
		return err
	}
	if e.cfg.portkey {
		e.pk, e.pkBase, err = startPortkey(ctx)
		if err != nil {
			// Optional peer: say why and go on without it.
			e.pkSkipped = err.Error()
			fmt.Fprintln(os.Stderr, "bench: portkey skipped:", err)
		}
	}
	return nil
}

func freePorts() (int, int, error) {
	a, err := freePort()
	if err != nil {
		return 0, 0, err
	}
	b, err := freePort()
	return a, b, err
}

func (e *env) stopAll() {
	e.controls.stop()
	e.traced.stop()
	for _, c := range []*child{e.pk, e.gw, e.caddy, e.up} {
		if c != nil {
			c.stop()
		}
	}
}

// responsesBody is chatBody's conversation as a Responses request, the
// way Codex and the SDKs send one.
func responsesBody(model string, stream bool) []byte {
	var chat struct {
		Messages []map[string]string `json:"messages"`
	}
	_ = json.Unmarshal(chatBody(model, stream), &chat)
	input := []map[string]any{}
	for _, m := range chat.Messages[1:] {
		typ := "input_text"
		if m["role"] == "assistant" {
			typ = "output_text"
		}
		input = append(input, map[string]any{"type": "message", "role": m["role"], "content": []map[string]string{{"type": typ, "text": m["content"]}}})
	}
	b, _ := json.Marshal(map[string]any{
		"model": model, "instructions": chat.Messages[0]["content"], "input": input,
		"temperature": 0.2, "max_output_tokens": 512, "stream": stream, "store": false,
	})
	return b
}

// geminiBody is chatBody's conversation as a Gemini generateContent body
// (the model travels in the URL).
func geminiBody(model string) []byte {
	var chat struct {
		Messages []map[string]string `json:"messages"`
	}
	_ = json.Unmarshal(chatBody(model, false), &chat)
	contents := []map[string]any{}
	for _, m := range chat.Messages[1:] {
		role := "user"
		if m["role"] == "assistant" {
			role = "model"
		}
		contents = append(contents, map[string]any{"role": role, "parts": []map[string]string{{"text": m["content"]}}})
	}
	b, _ := json.Marshal(map[string]any{
		"systemInstruction": map[string]any{"parts": []map[string]string{{"text": chat.Messages[0]["content"]}}},
		"contents":          contents,
		"generationConfig":  map[string]any{"temperature": 0.2, "maxOutputTokens": 512},
	})
	return b
}

// chatBody is a realistic ~2 KB OpenAI chat request: a system prompt, a
// short history and a question.
func chatBody(model string, stream bool) []byte {
	system := "You are the platform team's assistant. Answer briefly and precisely; prefer code over prose; " +
		"cite the file and line when you refer to code; never invent APIs. " +
		strings.Repeat("Keep answers under two hundred words unless asked for more. ", 12)
	req := map[string]any{
		"model": model,
		"messages": []map[string]string{
			{"role": "system", "content": system},
			{"role": "user", "content": "How do I rotate the gateway's keys without downtime?"},
			{"role": "assistant", "content": "Add the new key next to the old one, reload Caddy, move clients over, then remove the old key and reload again."},
			{"role": "user", "content": "And how do I see which clients still use the old key? Show the report request."},
		},
		"temperature": 0.2,
		"max_tokens":  512,
		"stream":      stream,
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic(err) // a literal map always marshals
	}
	return b
}

func bearer(key string) http.Header {
	return http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}
}

// fetchPprof saves one of the proxy's pprof profiles (what: "heap",
// "profile?seconds=4", …) from Caddy's admin endpoint.
func fetchPprof(ctx context.Context, admin, what, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/%s", admin, what), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof: status %d", resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s %s/%s", runtime.NumCPU(), model, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
