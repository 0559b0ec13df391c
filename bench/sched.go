package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"golang.org/x/exp/trace"
)

// schedWait is how long a goroutine must wait runnable before -sched asks
// who held the processor meanwhile.
const schedWait = 150 * time.Microsecond

// schedReport reads a Go execution trace (a proxy's
// /debug/pprof/trace?seconds=N) and says where its goroutines waited to
// run: the distribution of their runnable-to-running delays, and for the
// delays over schedWait, which goroutines ran meanwhile, named by the
// function each was first seen in. It is how a tail at concurrency 1 was
// found to be a background goroutine holding the only processor.
func schedReport(r io.Reader, w io.Writer) error {
	tr, err := trace.NewReader(r)
	if err != nil {
		return err
	}
	type span struct {
		g          trace.GoID
		start, end trace.Time
	}
	type wait struct {
		g        trace.GoID
		from, to trace.Time
	}
	var (
		name       = map[trace.GoID]string{}
		runnableAt = map[trace.GoID]trace.Time{}
		runningAt  = map[trace.GoID]trace.Time{}
		spans      []span
		long       []wait
		delays     []time.Duration
	)
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if g := ev.Goroutine(); g != trace.NoGoroutine && name[g] == "" {
			name[g] = entryOf(ev.Stack())
		}
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		g, t := st.Resource.Goroutine(), ev.Time()
		if name[g] == "" {
			name[g] = entryOf(st.Stack)
		}
		from, to := st.Goroutine()
		switch {
		case to == trace.GoRunnable:
			runnableAt[g] = t
		case to == trace.GoRunning:
			if at, ok := runnableAt[g]; ok {
				d := time.Duration(t - at)
				delays = append(delays, d)
				if d > schedWait {
					long = append(long, wait{g, at, t})
				}
				delete(runnableAt, g)
			}
			runningAt[g] = t
		}
		if from == trace.GoRunning && to != trace.GoRunning {
			if at, ok := runningAt[g]; ok {
				spans = append(spans, span{g, at, t})
				delete(runningAt, g)
			}
		}
	}
	if len(delays) == 0 {
		return fmt.Errorf("the trace holds no goroutine that waited to run")
	}
	slices.Sort(delays)
	at := func(q float64) time.Duration { return delays[int(q*float64(len(delays)-1))] }
	fmt.Fprintf(w, "%d waits to run: p50 %s, p99 %s, p99.9 %s, max %s; %d over %s\n\n",
		len(delays), at(.5), at(.99), at(.999), delays[len(delays)-1], len(long), schedWait)
	held := map[string]time.Duration{}
	ran := map[string]time.Duration{}
	for _, s := range spans {
		ran[name[s.g]] += time.Duration(s.end - s.start)
	}
	// Spans are in the order they ended, waits in the order they ended:
	// a sweep would do, but a trace of seconds holds tens of thousands of
	// each and a plain overlap test over the long waits is quick enough.
	for _, lw := range long {
		for _, s := range spans {
			if lo, hi := max(s.start, lw.from), min(s.end, lw.to); hi > lo && s.g != lw.g {
				held[name[s.g]] += time.Duration(hi - lo)
			}
		}
	}
	printShares(w, "held the processor while another goroutine waited over "+schedWait.String(), held)
	printShares(w, "ran in all", ran)
	return nil
}

// entryOf names a goroutine by the outermost functions of a stack: where
// it started, and what that called.
func entryOf(st trace.Stack) string {
	var fs []string
	for f := range st.Frames() {
		fs = append(fs, f.Func)
	}
	switch len(fs) {
	case 0:
		return ""
	case 1:
		return fs[0]
	}
	return fs[len(fs)-1] + " → " + fs[len(fs)-2]
}

func printShares(w io.Writer, title string, m map[string]time.Duration) {
	type row struct {
		name string
		d    time.Duration
	}
	var rows []row
	for n, d := range m {
		if n == "" {
			n = "(unnamed)"
		}
		rows = append(rows, row{n, d})
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(b.d, a.d) })
	fmt.Fprintf(w, "| %s | time |\n|---|---:|\n", title)
	for i, r := range rows {
		if i == 15 {
			break
		}
		fmt.Fprintf(w, "| %s | %s |\n", r.name, r.d.Round(time.Microsecond))
	}
	fmt.Fprintln(w)
}
