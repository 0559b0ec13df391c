package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// target is one thing the load generator drives.
type target struct {
	url    string
	header http.Header
	body   []byte
	stream bool
	// stamped: the stream's content deltas carry their upstream send time.
	stamped bool
}

// loadResult is what one closed-loop run measured.
type loadResult struct {
	requests int
	errors   int
	firstErr string
	elapsed  time.Duration
	latency  []time.Duration // whole request, sorted
	ttfb     []time.Duration // to the first body line, sorted (streams)
	chunk    []time.Duration // upstream send → client arrival per chunk, sorted (stamped streams)
}

func (r *loadResult) rps() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.requests) / r.elapsed.Seconds()
}

// newClient keeps one connection per worker alive, as a real client pool
// would; compression off so bytes arrive as the server flushed them.
func newClient(conc int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        conc * 2,
		MaxIdleConnsPerHost: conc * 2,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

// workerStats is one worker's own slice of the measurements, merged at the
// end so workers never contend on a lock.
type workerStats struct {
	n, errs  int
	firstErr string
	lat      []time.Duration
	ttfb     []time.Duration
	chunk    []time.Duration
}

// drive runs conc workers, each sending its next request as soon as the
// previous answer is read in full, for d.
func drive(ctx context.Context, client *http.Client, t target, conc int, d time.Duration) *loadResult {
	return driveEach(ctx, client, func(int) target { return t }, conc, d)
}

// driveEach is drive with a target per worker (its own key, say).
func driveEach(ctx context.Context, client *http.Client, targetOf func(worker int) target, conc int, d time.Duration) *loadResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	stats := make([]workerStats, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range stats {
		wg.Add(1)
		t := targetOf(i)
		go func(ws *workerStats) {
			defer wg.Done()
			br := bufio.NewReaderSize(nil, 16<<10)
			for ctx.Err() == nil {
				nl, nt, nc := len(ws.lat), len(ws.ttfb), len(ws.chunk)
				err := once(ctx, client, t, br, ws)
				if ctx.Err() != nil {
					// Cut off by the end of the run: neither counted nor an error.
					ws.lat, ws.ttfb, ws.chunk = ws.lat[:nl], ws.ttfb[:nt], ws.chunk[:nc]
					return
				}
				if err != nil {
					ws.errs++
					if ws.firstErr == "" {
						ws.firstErr = err.Error()
					}
					continue
				}
				ws.n++
			}
		}(&stats[i])
	}
	wg.Wait()
	res := &loadResult{elapsed: time.Since(start)}
	for i := range stats {
		s := &stats[i]
		res.requests += s.n
		res.errors += s.errs
		if res.firstErr == "" {
			res.firstErr = s.firstErr
		}
		res.latency = append(res.latency, s.lat...)
		res.ttfb = append(res.ttfb, s.ttfb...)
		res.chunk = append(res.chunk, s.chunk...)
	}
	slices.Sort(res.latency)
	slices.Sort(res.ttfb)
	slices.Sort(res.chunk)
	return res
}

// once sends one request and reads the whole answer. Measurements are
// appended to ws only when the request succeeds.
func once(ctx context.Context, client *http.Client, t target, br *bufio.Reader, ws *workerStats) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(t.body))
	if err != nil {
		return err
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if !t.stream {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		ws.lat = append(ws.lat, time.Since(start))
		return nil
	}
	br.Reset(resp.Body)
	first := true
	mark := len(ws.chunk)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && first && bytes.HasPrefix(line, []byte("data:")) {
			ws.ttfb = append(ws.ttfb, time.Since(start))
			first = false
		}
		if t.stamped {
			if sent, ok := stampOf(line); ok {
				ws.chunk = append(ws.chunk, time.Duration(time.Now().UnixNano()-sent))
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			ws.chunk = ws.chunk[:mark]
			if !first {
				ws.ttfb = ws.ttfb[:len(ws.ttfb)-1]
			}
			return err
		}
	}
	if first {
		return fmt.Errorf("stream ended without an event")
	}
	ws.lat = append(ws.lat, time.Since(start))
	return nil
}

// stampOf reads the send time the stamped upstream put in a chunk's
// content delta.
func stampOf(line []byte) (int64, bool) {
	key := []byte(`"content":"`)
	i := bytes.Index(line, key)
	if i < 0 {
		// A Responses text delta, or a Gemini text part.
		key = []byte(`"delta":"`)
		if i = bytes.Index(line, key); i < 0 {
			key = []byte(`"text":"`)
			if i = bytes.Index(line, key); i < 0 {
				return 0, false
			}
		}
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}

// pct is the q-quantile (0..1) of sorted durations, nearest rank.
func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// idleResult is what holding many open streams cost.
type idleResult struct {
	open    int
	failed  int
	rssMB   float64 // VmRSS with every stream open
	hwmMB   float64 // VmHWM at that moment
	openFor time.Duration
}

// holdStreams opens n streaming requests whose upstream pauses after the
// first chunk, samples the server's memory once all are open (and calls
// atPeak, if set, while they still are), then cancels them all. dialers bounds the connection storm so the listen
// backlog never overflows.
func holdStreams(ctx context.Context, t target, n, dialers int, pid int, atPeak func()) idleResult {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		DialContext:        (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableCompression: true,
		MaxIdleConns:       -1,
	}}
	defer client.CloseIdleConnections()
	sem := make(chan struct{}, dialers)
	opened := make(chan bool, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			ok := false
			defer func() {
				if !ok {
					<-sem
					opened <- false
				}
			}()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(t.body))
			if err != nil {
				return
			}
			for k, v := range t.header {
				req.Header[k] = v
			}
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return
			}
			br := bufio.NewReaderSize(resp.Body, 512)
			if line, err := br.ReadSlice('\n'); (err != nil && err != bufio.ErrBufferFull) || !bytes.HasPrefix(line, []byte("data:")) {
				return
			}
			ok = true
			<-sem
			opened <- true
			// Held open until the run cancels the request.
			_, _ = io.Copy(io.Discard, br)
		}()
	}
	res := idleResult{}
	for i := 0; i < n; i++ {
		select {
		case ok := <-opened:
			if ok {
				res.open++
			} else {
				res.failed++
			}
		case <-ctx.Done():
			i = n
		}
	}
	res.openFor = time.Since(start)
	// Let the server finish whatever each accepted stream allocates lazily.
	time.Sleep(300 * time.Millisecond)
	if m, err := readMem(pid); err == nil {
		res.rssMB, res.hwmMB = m.rssMB, m.hwmMB
	}
	if atPeak != nil {
		atPeak()
	}
	cancel()
	wg.Wait()
	return res
}
