package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"time"
)

// rssSample is one reading of a process's resident memory.
type rssSample struct {
	at    time.Duration // since the load began
	rssMB float64
}

// soakResult is one proxy's memory over the soak.
type soakResult struct {
	key, label       string
	startMB, idleMB  float64 // at start-up; just before the load
	steadyMB, peakMB float64 // median and highest over the steady phase
	growth           float64 // MiB per minute over the steady phase
	afterMB          float64 // after the load and -soak-idle
	requests, errors int
	rps              float64
}

// steadyFrom is the share of the load the steady phase starts after:
// pools, caches and the heap's first growth are warm-up, not a leak.
const steadyFrom = 0.25

// growthRate is the least-squares slope of RSS over time, in MiB per
// minute, of the samples taken after the first steadyFrom of the load;
// NaN with fewer than two.
func growthRate(samples []rssSample, load time.Duration) float64 {
	var xs, ys []float64
	for _, s := range samples {
		if s.at >= time.Duration(float64(load)*steadyFrom) {
			xs, ys = append(xs, s.at.Minutes()), append(ys, s.rssMB)
		}
	}
	if len(xs) < 2 {
		return math.NaN()
	}
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/float64(len(xs)), my/float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return math.NaN()
	}
	return num / den
}

// steadyStats is the median and highest RSS of the steady phase.
func steadyStats(samples []rssSample, load time.Duration) (median, peak float64) {
	var v []float64
	for _, s := range samples {
		if s.at >= time.Duration(float64(load)*steadyFrom) {
			v = append(v, s.rssMB)
		}
	}
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	slices.Sort(v)
	return v[len(v)/2], v[len(v)-1]
}

// measureSoak loads each proxy in turn for fc.soak, sampling its RSS
// every second, then leaves it idle for fc.soakIdle and reads it again.
// The gateway's workers cycle through pass-through, translated and
// Messages requests so every hot path holds memory during the soak; plain
// Caddy and Portkey get the chat request they can serve.
func (e *env) measureSoak(ctx context.Context, fc fieldConfig, startRSS map[string]float64) ([]soakResult, error) {
	ts := e.fieldTargets()
	byKey := map[string]proxyTarget{}
	for _, t := range ts {
		byKey[t.key] = t
	}
	gwMix := []target{byKey["gw-openai"].req, byKey["gw-messages"].req,
		{url: e.gwBase + "/v1/chat/completions", header: bearer(benchKey), body: chatBody("claude", false)},
		{url: e.gwBase + "/v1/responses", header: bearer(benchKey), body: responsesBody("oa", false)}}
	type subject struct {
		key, label string
		proc       *child
		targets    []target
	}
	subjects := []subject{
		{"caddy", byKey["caddy"].label, e.caddy, []target{byKey["caddy"].req}},
		{"gateway", "gateway (pass-through, translated, Messages and Responses in turn)", e.gw, gwMix},
	}
	if pk, ok := byKey["portkey"]; ok {
		subjects = append(subjects, subject{"portkey", pk.label, pk.proc, []target{pk.req}})
	}
	var out []soakResult
	for _, s := range subjects {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		fmt.Fprintf(os.Stderr, "soak %-10s %s load, %s idle …\n", s.key, fc.soak, fc.soakIdle)
		pid := s.proc.pid()
		r := soakResult{key: s.key, label: s.label, startMB: math.NaN(), idleMB: math.NaN(), afterMB: math.NaN()}
		startKey := s.key
		if startKey == "gateway" {
			startKey = "gw-openai"
		}
		if v, ok := startRSS[startKey]; ok {
			r.startMB = v
		}
		if m, err := readMem(pid); err == nil {
			r.idleMB = m.rssMB
		}
		var samples []rssSample
		var mu sync.Mutex
		loadCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		begin := time.Now()
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-loadCtx.Done():
					return
				case <-tick.C:
					if m, err := readMem(pid); err == nil {
						mu.Lock()
						samples = append(samples, rssSample{at: time.Since(begin), rssMB: m.rssMB})
						mu.Unlock()
					}
				}
			}
		}()
		client := newClient(fc.soakConc)
		res := driveEach(ctx, client, func(w int) target { return s.targets[w%len(s.targets)] }, fc.soakConc, fc.soak)
		stop()
		wg.Wait()
		client.CloseIdleConnections()
		r.requests, r.errors, r.rps = res.requests, res.errors, res.rps()
		if res.errors > 0 {
			fmt.Fprintf(os.Stderr, "  %d errors, first: %s\n", res.errors, res.firstErr)
		}
		r.steadyMB, r.peakMB = steadyStats(samples, fc.soak)
		r.growth = growthRate(samples, fc.soak)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(fc.soakIdle):
		}
		if m, err := readMem(pid); err == nil {
			r.afterMB = m.rssMB
		}
		out = append(out, r)
	}
	return out, nil
}

// givenBack is the share of what the load added over idle that the
// process returned after it: 100% is all of it.
func givenBack(idle, steady, after float64) float64 {
	if math.IsNaN(idle) || math.IsNaN(steady) || math.IsNaN(after) || steady <= idle {
		return math.NaN()
	}
	return (steady - after) / (steady - idle) * 100
}

func printSoak(w io.Writer, fc fieldConfig, res []soakResult) {
	fmt.Fprintf(w, "\n### Memory soak (%d workers for %s, steady phase after the first %.0f%%, then %s idle; RSS in MiB)\n\n", fc.soakConc, fc.soak, steadyFrom*100, fc.soakIdle)
	fmt.Fprintln(w, "| proxy | at start | idle before load | steady (median) | steady peak | **growth MiB/min** | after idle | given back | req/s | errors |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range res {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %d |\n", r.label, num(r.startMB, "%.1f"), num(r.idleMB, "%.1f"),
			num(r.steadyMB, "%.1f"), num(r.peakMB, "%.1f"), num(r.growth, "%+.2f"), num(r.afterMB, "%.1f"),
			num(givenBack(r.idleMB, r.steadyMB, r.afterMB), "%.0f%%"), r.rps, r.errors)
	}
}
