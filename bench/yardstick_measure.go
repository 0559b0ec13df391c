package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// loadPoint is one level of a sustained climb.
type loadPoint struct {
	conc             int
	rps              float64
	p99              time.Duration
	requests, errors int
	firstErr         string
	// proxyBusy and harnessBusy: how busy the proxies' CPUs and the
	// others were over the level, when the run pinned them (cpuPlan); a
	// figure is the proxy's only where its CPU, not the harness's, ran
	// out.
	proxyBusy, harnessBusy float64
}

// meets says the level holds the field's criteria: something completed,
// p99 under a second, errors under 0.1 % of what was sent.
func (p loadPoint) meets() bool {
	return p.requests > 0 && p.p99 < sustainP99 && float64(p.errors) < sustainErrFrac*float64(p.requests+p.errors)
}

// sustainedBest is the highest throughput among the levels that meet the
// criteria; ok is false when none does.
func sustainedBest(points []loadPoint) (best loadPoint, ok bool) {
	for _, p := range points {
		if p.meets() && (!ok || p.rps > best.rps) {
			best, ok = p, true
		}
	}
	return best, ok
}

// climbDone says a target needs no higher level: its last level broke
// the criteria, or its last two levels each gained less than
// sustainMinGain over the best before them (saturated: more workers only
// queue). One flat level is not enough on a noisy machine.
func climbDone(points []loadPoint) bool {
	n := len(points)
	if n == 0 {
		return false
	}
	if !points[n-1].meets() {
		return true
	}
	flat := func(i int) bool {
		prev, ok := sustainedBest(points[:i])
		return ok && points[i].rps < sustainMinGain*prev.rps
	}
	return n >= 3 && flat(n-1) && flat(n-2)
}

// sustainResult is one target's climb.
type sustainResult struct {
	proxyTarget
	points []loadPoint
}

// measureSustained climbs the levels level-major, every target still
// climbing in turn at each, so the machine's other load falls on all of
// them; a target leaves the climb once climbDone.
func measureSustained(ctx context.Context, targets []proxyTarget, yc ysConfig) ([]sustainResult, error) {
	res := make([]sustainResult, len(targets))
	for i, t := range targets {
		res[i].proxyTarget = t
	}
	for _, conc := range yc.levels {
		for i := range res {
			r := &res[i]
			if climbDone(r.points) {
				continue
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			fmt.Fprintf(os.Stderr, "sustained %4d workers %-12s …", conc, r.key)
			client := newClient(conc)
			drive(ctx, client, r.req, conc, yc.warmup)
			before := readCPUTimes()
			l := drive(ctx, client, r.req, conc, yc.step)
			after := readCPUTimes()
			client.CloseIdleConnections()
			p := loadPoint{conc: conc, rps: l.rps(), p99: pct(l.latency, .99), requests: l.requests, errors: l.errors, firstErr: l.firstErr}
			if yc.cpus != nil {
				p.proxyBusy, p.harnessBusy = after.busy(before, yc.cpus.proxy), after.busy(before, yc.cpus.harness)
			}
			fmt.Fprintf(os.Stderr, " %.0f req/s, p99 %s, %d errors\n", p.rps, ms(p.p99), p.errors)
			r.points = append(r.points, p)
		}
	}
	return res, nil
}

func printSustained(w io.Writer, yc ysConfig, res []sustainResult) {
	fmt.Fprintf(w, "\n### Sustained throughput against a %s mock (p99 < %s, errors < %.1f %%; closed loop, %v workers, %s a level after %s warm-up)\n\n",
		mockDelay, sustainP99, 100*sustainErrFrac, yc.levels, yc.step, yc.warmup)
	caddy := 0.0
	for _, r := range res {
		if b, ok := sustainedBest(r.points); ok && r.key == "caddy" {
			caddy = b.rps
		}
	}
	fmt.Fprintln(w, "| scenario | **sustained req/s** | ÷ Caddy | workers | p99 there | CPU busy there: proxies / harness | levels (req/s / p99 / errors) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|")
	for _, r := range res {
		best, ok := sustainedBest(r.points)
		rps, ratio, workers, p99, busy := "—", "—", "—", "—", "—"
		if ok {
			rps, workers, p99 = fmt.Sprintf("%.0f", best.rps), fmt.Sprint(best.conc), ms(best.p99)
			if caddy > 0 {
				ratio = fmt.Sprintf("%.2f×", best.rps/caddy)
			}
			if yc.cpus != nil {
				busy = fmt.Sprintf("%.0f %% / %.0f %%", 100*best.proxyBusy, 100*best.harnessBusy)
			}
		}
		levels := ""
		for i, p := range r.points {
			if i > 0 {
				levels += "; "
			}
			levels += fmt.Sprintf("%d: %.0f / %s / %d", p.conc, p.rps, ms(p.p99), p.errors)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.label, rps, ratio, workers, p99, busy, levels)
		for _, p := range r.points {
			if p.firstErr != "" {
				fmt.Fprintf(os.Stderr, "  %s at %d workers: first error: %s\n", r.key, p.conc, p.firstErr)
				break
			}
		}
	}
}

// ttftResult is one target's times to the first streamed event.
type ttftResult struct {
	proxyTarget
	ttft     []time.Duration // sorted
	errors   int
	firstErr string
}

// ttftRoundWarmup is the unmeasured streaming before each
// time-to-first-token round after the first (which warms up for
// -ys-warmup): enough streams that a row idle while the others ran has
// its leases back (see c1RoundWarmup).
const ttftRoundWarmup = 200 * time.Millisecond

// measureTTFT runs short stamped streams closed loop, in interleaved
// rounds visiting the targets in turn, each after an unmeasured
// warm-up, and keeps each one's time to its first event. Interleaved,
// a row's p99 is not one stretch of the machine's background work.
func measureTTFT(ctx context.Context, targets []proxyTarget, yc ysConfig) ([]ttftResult, error) {
	res := make([]ttftResult, len(targets))
	for i, t := range targets {
		res[i].proxyTarget = t
	}
	each := yc.ttftDuration / time.Duration(yc.ttftRounds)
	for round := 1; round <= yc.ttftRounds; round++ {
		for i := range res {
			r := &res[i]
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			fmt.Fprintf(os.Stderr, "ttft round %d/%d %-12s …\n", round, yc.ttftRounds, r.key)
			if !sleepCtx(ctx, rowSettle) {
				return nil, ctx.Err()
			}
			client := newClient(yc.ttftConc)
			warm := yc.warmup
			if round > 1 {
				warm = min(warm, ttftRoundWarmup)
			}
			drive(ctx, client, r.req, yc.ttftConc, warm)
			l := drive(ctx, client, r.req, yc.ttftConc, each)
			client.CloseIdleConnections()
			r.ttft = append(r.ttft, l.ttfb...)
			r.errors += l.errors
			if r.firstErr == "" {
				r.firstErr = l.firstErr
			}
		}
	}
	for i := range res {
		slices.Sort(res[i].ttft)
	}
	return res, nil
}

func printTTFT(w io.Writer, yc ysConfig, res []ttftResult) {
	fmt.Fprintf(w, "\n### Time to first token (streams of %d deltas %s apart, %d at a time, %s per row in %d interleaved rounds, the first after %s unmeasured, the others after %s)\n\n",
		ttftChunks, ttftGap, yc.ttftConc, yc.ttftDuration, yc.ttftRounds, yc.warmup, min(yc.warmup, ttftRoundWarmup))
	var direct []time.Duration
	for _, r := range res {
		if r.key == "direct" {
			direct = r.ttft
		}
	}
	fmt.Fprintln(w, "| scenario | streams | TTFT p50 | TTFT p99 | added p50 | **added p99** | errors |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range res {
		a50, a99 := "—", "—"
		if r.key != "direct" && len(direct) > 0 && len(r.ttft) > 0 {
			a50, a99 = signedUs(pct(r.ttft, .5)-pct(direct, .5)), signedUs(pct(r.ttft, .99)-pct(direct, .99))
		}
		p50, p99 := "—", "—"
		if len(r.ttft) > 0 {
			p50, p99 = us(pct(r.ttft, .5)), us(pct(r.ttft, .99))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %d |\n", r.label, len(r.ttft), p50, p99, a50, a99, r.errors)
		if r.errors > 0 {
			fmt.Fprintf(os.Stderr, "  %s: %d errors, first: %s\n", r.key, r.errors, truncate(r.firstErr, 200))
		}
	}
}
