package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"
)

type kind int

const (
	reqResp kind = iota
	streaming
	idleHold
)

type scenario struct {
	key, label string
	kind       kind
	target     target
	proc       *child // measured for CPU and memory; nil for direct
	admin      string // Caddy admin address, for -profile
}

func scenarioKeys() []string {
	var keys []string
	for _, s := range (&env{cfg: config{portkey: true}}).scenarioList() {
		keys = append(keys, s.key)
	}
	return keys
}

func (e *env) scenarioList() []scenario {
	up := "http://" + e.upAddr
	plain := http2json()
	gwH := bearer(benchKey)
	pk := bearer("sk-portkey-unused")
	pk.Set("X-Portkey-Provider", "openai")
	pk.Set("X-Portkey-Custom-Host", up+"/openai/v1")
	list := []scenario{
		{key: "direct", label: "direct to upstream", target: target{url: up + "/openai/v1/chat/completions", header: plain, body: chatBody("fake-gpt", false)}},
		{key: "caddy", label: "plain Caddy reverse_proxy", proc: e.caddy, admin: e.caddyAdmin, target: target{url: e.caddyBase + "/openai/v1/chat/completions", header: plain, body: chatBody("fake-gpt", false)}},
		{key: "gw-openai", label: "gateway openai/ (pass-through)", proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/chat/completions", header: gwH, body: chatBody("oa", false)}},
		{key: "gw-anthropic", label: "gateway anthropic/ (translated)", proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/chat/completions", header: gwH, body: chatBody("claude", false)}},
		{key: "gw-ollama", label: "gateway ollama/ (translated)", proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/chat/completions", header: gwH, body: chatBody("llama", false)}},
		{key: "gw-responses", label: "gateway Responses → openai/ chat (translated)", proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/responses", header: gwH, body: responsesBody("oa", false)}},
		{key: "gw-responses-echo", label: "gateway Responses → echo/ (translated)", proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/responses", header: gwH, body: responsesBody("echo", false)}},
		{key: "gw-gemini", label: "gateway Gemini API → openai/ chat (translated)", proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1beta/models/oa:generateContent", header: gwH, body: geminiBody("oa")}},
		{key: "gw-messages", label: "gateway Anthropic Messages → openai/ chat (translated)", proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/messages", header: anthropicHeader(benchKey), body: messagesBody("oa", false)}},
	}
	list = append(list, e.controlsScenarios()...)
	list = append(list, e.tracedScenarios()...)
	if e.cfg.portkey {
		list = append(list, scenario{key: "portkey", label: "Portkey gateway (npm)", proc: e.pk, target: target{url: e.pkBase + "/v1/chat/completions", header: pk, body: chatBody("fake-gpt", false)}})
	}
	list = append(list,
		scenario{key: "s-direct", label: "direct to upstream", kind: streaming, target: target{url: up + "/ts/v1/chat/completions", header: plain, body: chatBody("fake-stamped", true), stream: true, stamped: true}},
		scenario{key: "s-caddy", label: "plain Caddy reverse_proxy", kind: streaming, proc: e.caddy, target: target{url: e.caddyBase + "/ts/v1/chat/completions", header: plain, body: chatBody("fake-stamped", true), stream: true, stamped: true}},
		scenario{key: "s-gw-openai", label: "gateway openai/ (pass-through)", kind: streaming, proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/chat/completions", header: gwH, body: chatBody("ts", true), stream: true, stamped: true}},
		scenario{key: "s-gw-anthropic", label: "gateway anthropic/ (translated)", kind: streaming, proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/chat/completions", header: gwH, body: chatBody("claude", true), stream: true}},
		scenario{key: "s-gw-ollama", label: "gateway ollama/ (translated)", kind: streaming, proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/chat/completions", header: gwH, body: chatBody("llama", true), stream: true}},
		scenario{key: "s-gw-responses", label: "gateway Responses → openai/ chat (translated)", kind: streaming, proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/responses", header: gwH, body: responsesBody("ts", true), stream: true, stamped: true}},
		scenario{key: "s-gw-gemini", label: "gateway Gemini API → openai/ chat (translated)", kind: streaming, proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1beta/models/ts:streamGenerateContent?alt=sse", header: gwH, body: geminiBody("ts"), stream: true, stamped: true}},
		scenario{key: "s-gw-responses-echo", label: "gateway Responses → echo/ (translated)", kind: streaming, proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/responses", header: gwH, body: responsesBody("echo", true), stream: true}},
		scenario{key: "idle-caddy", label: "plain Caddy reverse_proxy", kind: idleHold, proc: e.caddy, admin: e.caddyAdmin, target: target{url: e.caddyBase + "/idle/v1/chat/completions", header: plain, body: chatBody("fake-idle", true)}},
		scenario{key: "idle-gw", label: "gateway openai/ (pass-through)", kind: idleHold, proc: e.gw, admin: e.gwAdmin, target: target{url: e.gwBase + "/v1/chat/completions", header: gwH, body: chatBody("idle", true)}},
	)
	return list
}

func http2json() map[string][]string {
	return map[string][]string{"Content-Type": {"application/json"}}
}

// row is one measured scenario.
type row struct {
	scenario
	res      *loadResult
	idle     idleResult
	cpuPer1k float64 // NaN when no process is charged
	peakMB   float64 // NaN when unknown
}

type report struct {
	cfg    config
	rows   []row
	rounds int
}

// medianRound keeps, for every scenario, the round with the median
// throughput (idle rows: median RSS), so one unlucky round on a shared
// machine neither flatters nor sinks a row.
func medianRound(rounds []*report) *report {
	// The last round is the fullest: it alone holds the idle rows.
	last := rounds[len(rounds)-1]
	out := &report{cfg: last.cfg, rounds: len(rounds)}
	for _, want := range last.rows {
		var cands []row
		for _, r := range rounds {
			if got := r.find(want.key); got != nil {
				cands = append(cands, *got)
			}
		}
		slices.SortFunc(cands, func(a, b row) int {
			if a.kind == idleHold {
				return cmp.Compare(a.idle.rssMB, b.idle.rssMB)
			}
			return cmp.Compare(a.res.rps(), b.res.rps())
		})
		out.rows = append(out.rows, cands[len(cands)/2])
	}
	return out
}

func (e *env) scenarios(ctx context.Context, rep *report, idle bool) error {
	for _, s := range e.scenarioList() {
		if !e.cfg.selects(s.key) {
			continue
		}
		if s.key == "portkey" && e.pk == nil {
			continue
		}
		if isControls(s.key) && e.controls == nil {
			continue
		}
		if s.kind == idleHold && (e.cfg.idle == 0 || !idle) {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintf(os.Stderr, "%-16s %s …\n", s.key, s.label)
		r := row{scenario: s, cpuPer1k: math.NaN(), peakMB: math.NaN()}
		if s.kind == idleHold {
			var atPeak func()
			if e.cfg.profile != nil && s.admin != "" && e.cfg.profile.MatchString(s.key) {
				atPeak = func() {
					// expvar's memstats tell heap from stacks from what the runtime kept.
					_ = fetchPprof(ctx, s.admin, "../vars", filepath.Join(e.workdir, s.key+".vars.json"))
					path := filepath.Join(e.workdir, s.key+".heap.pprof")
					if err := fetchPprof(ctx, s.admin, "heap?gc=1", path); err != nil {
						fmt.Fprintln(os.Stderr, "bench: heap profile:", err)
					} else {
						fmt.Fprintln(os.Stderr, "  heap profile:", path)
					}
				}
			}
			r.idle = holdStreams(ctx, s.target, e.cfg.idle, 128, s.proc.pid(), atPeak)
			r.peakMB = r.idle.hwmMB
			rep.rows = append(rep.rows, r)
			continue
		}
		conc := e.cfg.conc
		if s.kind == streaming {
			conc = e.cfg.streamConc
		}
		client := newClient(conc)
		if e.cfg.warmup > 0 {
			drive(ctx, client, s.target, conc, e.cfg.warmup)
		}
		var cpu0 float64
		reset := false
		if s.proc != nil {
			reset = resetPeak(s.proc.pid())
			cpu0, _ = cpuSeconds(s.proc.pid())
		}
		profDone := make(chan error, 1)
		profiling := e.cfg.profile != nil && s.admin != "" && e.cfg.profile.MatchString(s.key)
		if profiling {
			go func() {
				secs := max(1, int((e.cfg.duration - 200*time.Millisecond).Seconds()))
				profDone <- fetchPprof(ctx, s.admin, fmt.Sprintf("profile?seconds=%d", secs), filepath.Join(e.workdir, s.key+".pprof"))
			}()
		}
		r.res = drive(ctx, client, s.target, conc, e.cfg.duration)
		client.CloseIdleConnections()
		if s.proc != nil {
			if cpu1, err := cpuSeconds(s.proc.pid()); err == nil && r.res.requests > 0 {
				r.cpuPer1k = (cpu1 - cpu0) / float64(r.res.requests) * 1000
			}
			if m, err := readMem(s.proc.pid()); err == nil {
				r.peakMB = m.hwmMB
				if !reset {
					r.label += " (RSS peak since start)"
				}
			}
		}
		if profiling {
			if err := <-profDone; err != nil {
				fmt.Fprintln(os.Stderr, "bench: profile:", err)
			} else {
				fmt.Fprintln(os.Stderr, "  profile:", filepath.Join(e.workdir, s.key+".pprof"))
			}
		}
		if r.res.errors > 0 {
			fmt.Fprintf(os.Stderr, "  %d errors, first: %s\n", r.res.errors, r.res.firstErr)
		}
		rep.rows = append(rep.rows, r)
	}
	return nil
}

func (rep *report) find(key string) *row {
	for i := range rep.rows {
		if rep.rows[i].key == key {
			return &rep.rows[i]
		}
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

func signedUs(d time.Duration) string {
	return fmt.Sprintf("%+.0f µs", float64(d)/float64(time.Microsecond))
}

func num(f float64, format string) string {
	if math.IsNaN(f) {
		return "—"
	}
	return fmt.Sprintf(format, f)
}

func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func (rep *report) print(w io.Writer) {
	c := rep.cfg
	fmt.Fprintf(w, "Machine: %s. Absolute numbers are machine-dependent; ratios to plain Caddy on the same run are the headline.\n", machine())
	if rep.rounds > 1 {
		fmt.Fprintf(w, "Each row is the median of %d interleaved rounds by throughput.\n", rep.rounds)
	}
	fmt.Fprintln(w)
	floor := rep.find("caddy")
	var any bool
	for _, r := range rep.rows {
		if r.kind != reqResp {
			continue
		}
		if !any {
			fmt.Fprintf(w, "### Request/response (%d workers, %s each, 2 KB chat request)\n\n", c.conc, c.duration)
			fmt.Fprintln(w, "| scenario | req/s | req/s ÷ Caddy | p50 | p90 | p99 | p99 ÷ Caddy | CPU s / 1k req | peak RSS | errors |")
			fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
			any = true
		}
		rr, fr := r.res, (*loadResult)(nil)
		if floor != nil {
			fr = floor.res
		}
		rpsRatio, p99Ratio := "—", "—"
		if fr != nil {
			rpsRatio = ratio(rr.rps(), fr.rps())
			p99Ratio = ratio(float64(pct(rr.latency, .99)), float64(pct(fr.latency, .99)))
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %d |\n", r.label, rr.rps(), rpsRatio,
			ms(pct(rr.latency, .5)), ms(pct(rr.latency, .9)), ms(pct(rr.latency, .99)), p99Ratio,
			num(r.cpuPer1k, "%.3f"), num(r.peakMB, "%.0f MB"), rr.errors)
	}
	sDirect, sFloor := rep.find("s-direct"), rep.find("s-caddy")
	any = false
	for _, r := range rep.rows {
		if r.kind != streaming {
			continue
		}
		if !any {
			fmt.Fprintf(w, "\n### Streaming (%d workers, %s each, %d chunks %s apart)\n\n", c.streamConc, c.duration, c.chunks, c.gap)
			fmt.Fprintln(w, "| scenario | streams/s | TTFB p50 | TTFB p99 | TTFB p50 − Caddy | chunk delay p50 | chunk delay mean | added per chunk vs Caddy (mean) | added per chunk vs direct (mean) | CPU s / 1k streams | peak RSS | errors |")
			fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
			any = true
		}
		rr := r.res
		ttfbVs := "—"
		if sFloor != nil && len(sFloor.res.ttfb) > 0 {
			ttfbVs = signedUs(pct(rr.ttfb, .5) - pct(sFloor.res.ttfb, .5))
		}
		cp50, cmean, vsFloor, vsDirect := "—", "—", "—", "—"
		if len(rr.chunk) > 0 {
			cp50, cmean = us(pct(rr.chunk, .5)), us(mean(rr.chunk))
			if sFloor != nil && len(sFloor.res.chunk) > 0 {
				vsFloor = signedUs(mean(rr.chunk) - mean(sFloor.res.chunk))
			}
			if sDirect != nil && len(sDirect.res.chunk) > 0 {
				vsDirect = signedUs(mean(rr.chunk) - mean(sDirect.res.chunk))
			}
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", r.label, rr.rps(),
			ms(pct(rr.ttfb, .5)), ms(pct(rr.ttfb, .99)), ttfbVs, cp50, cmean, vsFloor, vsDirect,
			num(r.cpuPer1k, "%.3f"), num(r.peakMB, "%.0f MB"), rr.errors)
	}
	any = false
	for _, r := range rep.rows {
		if r.kind != idleHold {
			continue
		}
		if !any {
			fmt.Fprintf(w, "\n### Idle streams held open (%d requested)\n\n", c.idle)
			fmt.Fprintln(w, "| proxy | streams open | failed | RSS with all open | peak RSS | time to open all |")
			fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
			any = true
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.0f MB | %.0f MB | %s |\n", r.label, r.idle.open, r.idle.failed, r.idle.rssMB, r.idle.hwmMB, r.idle.openFor.Round(time.Millisecond))
	}
	rep.printTargets(w)
}

// printTargets checks the targets the project holds itself to (issue #22:
// pass-through at least as fast as plain Caddy, with and without the team
// controls on; Responses and Gemini translated within 0.9×) against this run.
func (rep *report) printTargets(w io.Writer) {
	type check struct {
		name, got string
		ok        bool
	}
	var checks []check
	floor := rep.find("caddy")
	for _, k := range []string{"gw-openai", "gw-controls"} {
		t := rep.find(k)
		if floor == nil || t == nil || floor.res.rps() == 0 || t.res.rps() == 0 {
			continue
		}
		q := t.res.rps() / floor.res.rps()
		checks = append(checks, check{t.label + " req/s ≥ 1.0× Caddy", fmt.Sprintf("%.2f×", q), q >= 1.0})
		p := float64(pct(t.res.latency, .99)) / float64(pct(floor.res.latency, .99))
		checks = append(checks, check{t.label + " p99 ≤ 1.0× Caddy", fmt.Sprintf("%.2f×", p), p <= 1.0})
	}
	for _, k := range []struct {
		key string
		min float64
	}{{"gw-responses", 0.9}, {"gw-gemini", 0.9}, {"gw-messages", 0.9}, {"gw-anthropic", 0.8}, {"gw-ollama", 0.8}} {
		if t := rep.find(k.key); t != nil && floor != nil && floor.res.rps() > 0 {
			q := t.res.rps() / floor.res.rps()
			checks = append(checks, check{fmt.Sprintf("%s req/s ≥ %.1f× Caddy", t.label, k.min), fmt.Sprintf("%.2f×", q), q >= k.min})
		}
	}
	sFloor, sPass := rep.find("s-caddy"), rep.find("s-gw-openai")
	if sFloor != nil && sPass != nil && len(sFloor.res.ttfb) > 0 && len(sPass.res.ttfb) > 0 {
		d := pct(sPass.res.ttfb, .5) - pct(sFloor.res.ttfb, .5)
		checks = append(checks, check{"stream TTFB p50 within 1 ms of Caddy", signedUs(d), d <= time.Millisecond})
		if len(sPass.res.chunk) > 0 && len(sFloor.res.chunk) > 0 {
			a := mean(sPass.res.chunk) - mean(sFloor.res.chunk)
			checks = append(checks, check{"per-chunk overhead vs Caddy < 50 µs", signedUs(a), a < 50*time.Microsecond})
		}
	}
	if idle := rep.find("idle-gw"); idle != nil {
		checks = append(checks, check{fmt.Sprintf("%d idle streams under 300 MB RSS", rep.cfg.idle),
			fmt.Sprintf("%d open, %.0f MB", idle.idle.open, idle.idle.rssMB), idle.idle.open == rep.cfg.idle && idle.idle.rssMB < 300})
	}
	if len(checks) == 0 {
		return
	}
	fmt.Fprint(w, "\n### Targets (issue #7), this run\n\n")
	fmt.Fprintln(w, "| target | measured | |")
	fmt.Fprintln(w, "|---|---:|---|")
	for _, c := range checks {
		v := "met"
		if !c.ok {
			v = "**missed**"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", c.name, c.got, v)
	}
	fmt.Fprintln(w, "\nThe ledger is on (SQLite) for every gateway row.")
}
