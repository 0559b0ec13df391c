package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// c1Result is one target's latencies at concurrency 1.
type c1Result struct {
	proxyTarget
	lat      []time.Duration // sorted
	errors   int
	firstErr string
}

// c1Warmup requests per target open its connection and warm its caches
// before the first round; c1RoundWarmup more go before each later round.
// The field's harness measures one gateway at a time; interleaved, a row
// sits idle while the others run, and without them its first requests
// after the pause would be timed cold (the controls' leases on budgets
// and rate windows are given back after about a second idle, and taking
// them again is a database round trip): a cost of idling, not of
// steady traffic.
const (
	c1Warmup      = 200
	c1RoundWarmup = 50
)

// rowSettle is the pause before a row's round. The proxies share their
// CPUs, and a gateway's work goes on after its last request (the ledger
// writes its batch up to 200 ms later, SQLite's in the process): without
// the pause, that landed in the next row's first requests, and the row
// after another gateway read worse than the same code after plain Caddy,
// which leaves nothing behind.
const rowSettle = 300 * time.Millisecond

// measureC1 sends n sequential requests to every target over one
// kept-alive connection each, split into rounds that visit the targets in
// turn, so a burst of noise from the rest of the machine lands on all of
// them instead of on one. A target stops early when it has used its share
// of budget.
func measureC1(ctx context.Context, targets []proxyTarget, n, rounds int, budget time.Duration) ([]c1Result, error) {
	res := make([]c1Result, len(targets))
	stats := make([]workerStats, len(targets))
	readers := make([]*bufio.Reader, len(targets))
	for i, t := range targets {
		res[i].proxyTarget = t
		readers[i] = bufio.NewReaderSize(nil, 16<<10)
	}
	client := newClient(len(targets))
	defer client.CloseIdleConnections()
	per := n / rounds
	for i, t := range targets {
		var ws workerStats
		for j := 0; j < c1Warmup && ctx.Err() == nil; j++ {
			_ = once(ctx, client, t.req, readers[i], &ws)
		}
	}
	for r := 0; r < rounds; r++ {
		for i, t := range targets {
			fmt.Fprintf(os.Stderr, "latency round %d/%d %-12s …\n", r+1, rounds, t.key)
			if !sleepCtx(ctx, rowSettle) {
				return nil, ctx.Err()
			}
			deadline := time.Now().Add(budget / time.Duration(rounds))
			ws := &stats[i]
			if r > 0 {
				var warm workerStats
				for j := 0; j < c1RoundWarmup && ctx.Err() == nil; j++ {
					_ = once(ctx, client, t.req, readers[i], &warm)
				}
			}
			for j := 0; j < per && time.Now().Before(deadline); j++ {
				if err := once(ctx, client, t.req, readers[i], ws); err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					ws.errs++
					if ws.firstErr == "" {
						ws.firstErr = err.Error()
					}
				}
			}
		}
	}
	for i := range res {
		res[i].lat = stats[i].lat
		slices.Sort(res[i].lat)
		res[i].errors, res[i].firstErr = stats[i].errs, stats[i].firstErr
	}
	return res, nil
}

// addedP99 is what a proxy adds to the upstream's own p99: the field's
// headline latency figure.
func addedP99(proxy, direct []time.Duration) time.Duration {
	return pct(proxy, .99) - pct(direct, .99)
}

func printC1(w io.Writer, fc fieldConfig, res []c1Result) {
	var direct, caddy *c1Result
	for i := range res {
		switch res[i].key {
		case "direct":
			direct = &res[i]
		case "caddy":
			caddy = &res[i]
		}
	}
	fmt.Fprintf(w, "\n### Added latency at concurrency 1 (%d requests per row in %d interleaved rounds, each after %d unmeasured, 2 KB chat request)\n\n", fc.c1Requests, fc.c1Rounds, c1RoundWarmup)
	fmt.Fprintln(w, "| scenario | requests | p50 | p99 | p99.9 | added p50 | **added p99** | added p99 − Caddy's | errors |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range res {
		ap50, ap99, vsCaddy := "—", "—", "—"
		if direct != nil && r.key != "direct" && len(direct.lat) > 0 && len(r.lat) > 0 {
			ap50 = signedUs(pct(r.lat, .5) - pct(direct.lat, .5))
			ap99 = signedUs(addedP99(r.lat, direct.lat))
			if caddy != nil && r.key != "caddy" && len(caddy.lat) > 0 {
				vsCaddy = signedUs(addedP99(r.lat, direct.lat) - addedP99(caddy.lat, direct.lat))
			}
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %d |\n", r.label, len(r.lat),
			us(pct(r.lat, .5)), us(pct(r.lat, .99)), us(pct(r.lat, .999)), ap50, ap99, vsCaddy, r.errors)
		if r.errors > 0 {
			fmt.Fprintf(os.Stderr, "  %s: %d errors, first: %s\n", r.key, r.errors, r.firstErr)
		}
	}
}

// sleepCtx waits d unless ctx ends first; false: it ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
