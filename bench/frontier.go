package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"time"
)

// sweepPoint is one concurrency of the sweep.
type sweepPoint struct {
	conc   int
	rps    float64
	p99    time.Duration
	errors int
}

// sweepResult is one target's whole sweep.
type sweepResult struct {
	proxyTarget
	points []sweepPoint
}

// frontierBounds are the p99 bounds the field reports throughput under.
var frontierBounds = []time.Duration{time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond}

// measureSweep drives every target at every concurrency, closed loop.
// The loop runs concurrency-major, the targets in turn at each step, so
// the machine's other load is spread over all of them.
func measureSweep(ctx context.Context, targets []proxyTarget, concs []int, warmup, d time.Duration) ([]sweepResult, error) {
	res := make([]sweepResult, len(targets))
	for i, t := range targets {
		res[i].proxyTarget = t
	}
	for _, conc := range concs {
		for i, t := range targets {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			fmt.Fprintf(os.Stderr, "sweep %4d workers %-12s …\n", conc, t.key)
			client := newClient(conc)
			if warmup > 0 {
				drive(ctx, client, t.req, conc, warmup)
			}
			r := drive(ctx, client, t.req, conc, d)
			client.CloseIdleConnections()
			if r.errors > 0 {
				fmt.Fprintf(os.Stderr, "  %d errors, first: %s\n", r.errors, r.firstErr)
			}
			res[i].points = append(res[i].points, sweepPoint{conc: conc, rps: r.rps(), p99: pct(r.latency, .99), errors: r.errors})
		}
	}
	return res, nil
}

// frontier is the highest throughput among the sweep points whose p99 is
// within bound; a point with errors does not qualify, nor does one that
// completed nothing. ok is false when no point qualifies.
func frontier(points []sweepPoint, bound time.Duration) (best sweepPoint, ok bool) {
	for _, p := range points {
		if p.errors > 0 || p.rps <= 0 || p.p99 > bound {
			continue
		}
		if !ok || p.rps > best.rps {
			best, ok = p, true
		}
	}
	return best, ok
}

func printFrontier(w io.Writer, fc fieldConfig, res []sweepResult) {
	fmt.Fprintf(w, "\n### Throughput frontier (closed-loop sweep over %v workers, %s per point)\n\n", fc.sweep, fc.sweepDuration)
	fmt.Fprint(w, "| scenario |")
	for _, b := range frontierBounds {
		fmt.Fprintf(w, " req/s at p99 ≤ %s |", b)
	}
	fmt.Fprintln(w, " peak req/s (workers, p99) |")
	fmt.Fprint(w, "|---|")
	for range frontierBounds {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w, "---:|")
	for _, r := range res {
		fmt.Fprintf(w, "| %s |", r.label)
		for _, b := range frontierBounds {
			if p, ok := frontier(r.points, b); ok {
				fmt.Fprintf(w, " %.0f (%d) |", p.rps, p.conc)
			} else {
				fmt.Fprint(w, " — |")
			}
		}
		if p, ok := frontier(r.points, time.Duration(math.MaxInt64)); ok {
			fmt.Fprintf(w, " %.0f (%d, %s) |\n", p.rps, p.conc, ms(p.p99))
		} else {
			fmt.Fprintln(w, " — |")
		}
	}
	fmt.Fprintln(w, "\nIn parentheses: the workers of the sweep point that set the figure.")
	fmt.Fprint(w, "\nThe sweep, req/s and p99 per point:\n\n| workers |")
	for _, r := range res {
		fmt.Fprintf(w, " %s |", r.key)
	}
	fmt.Fprint(w, "\n|---:|")
	for range res {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for i, conc := range fc.sweep {
		fmt.Fprintf(w, "| %d |", conc)
		for _, r := range res {
			if i >= len(r.points) {
				fmt.Fprint(w, " — |")
				continue
			}
			p := r.points[i]
			errs := ""
			if p.errors > 0 {
				errs = fmt.Sprintf(", %d errors", p.errors)
			}
			fmt.Fprintf(w, " %.0f / %s%s |", p.rps, ms(p.p99), errs)
		}
		fmt.Fprintln(w)
	}
}
