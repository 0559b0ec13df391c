package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// gapTracker follows the arrival of one stream's deltas and keeps the
// longest wait between two of them. The wait for the first delta is the
// time to first byte, not a stall, and is not counted.
type gapTracker struct {
	last   time.Time
	frames int
	maxGap time.Duration
}

func (g *gapTracker) see(at time.Time) {
	if g.frames > 0 {
		g.maxGap = max(g.maxGap, at.Sub(g.last))
	}
	g.last = at
	g.frames++
}

// streamOutcome is how one paced stream went.
type streamOutcome struct {
	frames int  // stamped content deltas received
	bytes  int  // their content bytes (the stamps)
	done   bool // data: [DONE] arrived
	maxGap time.Duration
	err    error
}

// levelResult judges one concurrency level.
type levelResult struct {
	streams, peakOpen int
	lost              int // streams that lost a delta, ended early or failed
	stalled           int // streams with a gap over the stall bound
	worstGap          time.Duration
	firstErr          string
}

func (l levelResult) ok() bool { return l.streams > 0 && l.lost == 0 && l.stalled == 0 }

// judgeLevel counts the streams that lost a frame (fewer deltas or
// content bytes than sent, no [DONE], an error) and those that stalled
// (a gap between deltas longer than stall).
func judgeLevel(outs []streamOutcome, deltas, stampBytes int, stall time.Duration) levelResult {
	l := levelResult{streams: len(outs)}
	for _, o := range outs {
		if o.err != nil || !o.done || o.frames != deltas || o.bytes != deltas*stampBytes {
			l.lost++
			if l.firstErr == "" {
				if o.err != nil {
					l.firstErr = o.err.Error()
				} else {
					l.firstErr = fmt.Sprintf("%d of %d deltas (%d bytes), [DONE] %v", o.frames, deltas, o.bytes, o.done)
				}
			}
		}
		if o.maxGap > stall {
			l.stalled++
		}
		l.worstGap = max(l.worstGap, o.maxGap)
	}
	return l
}

// streamsResult is one proxy's climb through the levels.
type streamsResult struct {
	proxyTarget
	levels []int
	judged []levelResult
}

// sustained is the highest level passed before the first one that
// failed (0 when the first failed).
func (s streamsResult) sustained() int {
	best := 0
	for i, l := range s.judged {
		if !l.ok() {
			break
		}
		best = s.levels[i]
	}
	return best
}

// stampDigits is the length of a Unix-nanosecond stamp this century.
const stampDigits = 19

// measureStreams climbs the levels for every target until a level stalls
// or loses a frame.
func measureStreams(ctx context.Context, targets []proxyTarget, fc fieldConfig) ([]streamsResult, error) {
	stall := 10 * fc.streamPace
	var out []streamsResult
	for _, t := range targets {
		r := streamsResult{proxyTarget: t}
		for _, n := range fc.streamLevels {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			fmt.Fprintf(os.Stderr, "streams %5d %-12s …", n, t.key)
			outs, peak := runStreams(ctx, t.req, n, fc.streamDials, time.Duration(fc.streamDeltas)*fc.streamPace+30*time.Second)
			l := judgeLevel(outs, fc.streamDeltas, stampDigits, stall)
			l.peakOpen = peak
			fmt.Fprintf(os.Stderr, " peak open %d, lost %d, stalled %d, worst gap %s\n", peak, l.lost, l.stalled, ms(l.worstGap))
			r.levels, r.judged = append(r.levels, n), append(r.judged, l)
			if !l.ok() {
				if l.firstErr != "" {
					fmt.Fprintln(os.Stderr, "  first loss:", l.firstErr)
				}
				break
			}
			// Let connections close and the proxy settle before the next level.
			time.Sleep(500 * time.Millisecond)
		}
		out = append(out, r)
	}
	return out, nil
}

// runStreams runs n paced streams at once, at most dials of them
// connecting at a time so the listen backlog never overflows, and reports
// each one's outcome and how many were open at the same moment.
func runStreams(ctx context.Context, t target, n, dials int, limit time.Duration) ([]streamOutcome, int) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableCompression:  true,
		MaxIdleConnsPerHost: n,
	}
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	outs := make([]streamOutcome, n)
	sem := make(chan struct{}, dials)
	var open, peak atomic.Int64
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func(o *streamOutcome) {
			defer wg.Done()
			sem <- struct{}{}
			released := false
			release := func() {
				if !released {
					released = true
					<-sem
				}
			}
			defer release()
			*o = pacedStream(ctx, client, t, func() {
				release()
				now := open.Add(1)
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
			})
			open.Add(-1)
		}(&outs[i])
	}
	wg.Wait()
	return outs, int(peak.Load())
}

// pacedStream reads one stamped stream to its end; opened is called once
// the answer's headers arrived (and always before it returns).
func pacedStream(ctx context.Context, client *http.Client, t target, opened func()) (o streamOutcome) {
	called := false
	defer func() {
		if !called {
			opened()
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(t.body))
	if err != nil {
		o.err = err
		return o
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	called = true
	opened()
	if err != nil {
		o.err = err
		return o
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		o.err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
		return o
	}
	return readPaced(resp.Body)
}

// readPaced counts a stamped stream's deltas and their gaps.
func readPaced(body io.Reader) (o streamOutcome) {
	br := bufio.NewReaderSize(body, 16<<10)
	var g gapTracker
	for {
		line, err := br.ReadSlice('\n')
		now := time.Now()
		if _, ok := stampOf(line); ok {
			g.see(now)
			if i := bytes.Index(line, []byte(`"content":"`)); i >= 0 {
				rest := line[i+len(`"content":"`):]
				o.bytes += bytes.IndexByte(rest, '"')
			}
		}
		if bytes.HasPrefix(line, []byte("data: [DONE]")) {
			o.done = true
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			o.err = err
			break
		}
	}
	o.frames, o.maxGap = g.frames, g.maxGap
	return o
}

func printStreams(w io.Writer, fc fieldConfig, res []streamsResult) {
	fmt.Fprintf(w, "\n### Streams sustained (%d deltas %s apart; a stall is a gap over %s; levels %v)\n\n", fc.streamDeltas, fc.streamPace, 10*fc.streamPace, fc.streamLevels)
	fmt.Fprintln(w, "| scenario | **streams sustained** | worst gap there | peak open there | first failing level | its peak open | lost | stalled | worst gap | first loss |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range res {
		s := r.sustained()
		gap, open := "—", "—"
		for i, n := range r.levels {
			if n == s {
				gap, open = ms(r.judged[i].worstGap), fmt.Sprint(r.judged[i].peakOpen)
			}
		}
		fail := "none (all levels passed)"
		fOpen, lost, stalled, fGap, why := "—", "—", "—", "—", "—"
		if k := len(r.judged) - 1; k >= 0 && !r.judged[k].ok() {
			l := r.judged[k]
			fail, fOpen, lost, stalled, fGap = fmt.Sprint(r.levels[k]), fmt.Sprint(l.peakOpen), fmt.Sprint(l.lost), fmt.Sprint(l.stalled), ms(l.worstGap)
			if l.firstErr != "" {
				why = strings.ReplaceAll(truncate(l.firstErr, 80), "|", "\\|")
			}
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.label, s, gap, open, fail, fOpen, lost, stalled, fGap, why)
	}
}

// truncate shortens s to at most n bytes for a table cell.
func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
