package handlers

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/modelgate/modelgate/providers"
)

// bodyMemory bounds the request-body bytes a gateway holds at once, over
// all its requests. max_request_body bounds one body; without this, many
// small compressed uploads that each inflate to the limit hold the limit
// times their number (20 gzip bombs of 39 KB grew a gateway by 1.2 GB).
// A request counts every buffer it allocated while reading, the ones
// outgrown included, since those stay on the heap until the collector
// runs; it gives the bytes back when it ends.
type bodyMemory struct {
	max  int64
	mu   sync.Mutex
	used int64
	peak int64
	// waiting counts the requests waiting for room.
	waiting int
	// freed is closed, and replaced, whenever bytes are given back, so
	// waiting requests look again.
	freed chan struct{}
}

func newBodyMemory(max int64) *bodyMemory {
	return &bodyMemory{max: max, freed: make(chan struct{})}
}

// acquire takes n bytes, waiting until deadline (or ctx's end) for room;
// it reports whether it got them.
func (m *bodyMemory) acquire(ctx context.Context, n int64, deadline time.Time) bool {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		m.mu.Lock()
		if m.used+n <= m.max {
			m.used += n
			m.peak = max(m.peak, m.used)
			m.mu.Unlock()
			return true
		}
		wait := time.Until(deadline)
		if wait <= 0 || n > m.max {
			m.mu.Unlock()
			return false
		}
		// Counted as waiting in the same hold of the lock that takes
		// freed, so a release in between closes this very channel.
		freed := m.freed
		m.waiting++
		m.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		got := true
		select {
		case <-freed:
		case <-timer.C:
			got = false
		case <-ctx.Done():
			got = false
		}
		m.mu.Lock()
		m.waiting--
		m.mu.Unlock()
		if !got {
			return false
		}
	}
}

// release gives n bytes back and wakes the requests waiting for room.
func (m *bodyMemory) release(n int64) {
	if n == 0 {
		return
	}
	m.mu.Lock()
	m.used -= n
	if m.waiting > 0 {
		close(m.freed)
		m.freed = make(chan struct{})
	}
	m.mu.Unlock()
}

// stats reports the bytes held now, the most ever held at once and the
// requests waiting for room.
func (m *bodyMemory) stats() (used, peak int64, waiting int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used, m.peak, m.waiting
}

// responsesWorkingSet is how many times its input a Responses request
// holds at its peak: the body, the parsed items, the stored history
// resolved into them, the translated upstream body, the Response that
// echoes the input and the stored copy of it. Measured: an 8 MiB input
// raises the heap by 88 MiB on a translated backend (TestResponsesPeakHeap);
// counting only the body let six concurrent 30 MB inputs take 1.8 GB.
const responsesWorkingSet = 12

// wsTurnCopies is how many times its size a WebSocket message is held
// while its turn is built from it (the frame's fields, its input items,
// the connection's history joined to them, the turn's body), besides the
// message itself.
const wsTurnCopies = 5

// holdWorkingSet counts the working set of a request parsed whole
// (Responses, Converse), responsesWorkingSet times its input, against the
// body memory, on top of the body it already holds; one request never needs more than the whole body
// memory, so the largest input is served, alone. A request that finds no
// room within the gateway's wait gets 503 body_memory_full.
func (g *Gateway) holdWorkingSet(ctx context.Context, c *Call, req *clientRequest, input int64) *providers.APIError {
	// A WebSocket turn's connection holds its own share while the turn
	// runs (Call.carrierHeld): together they stay within the bound.
	want := g.bodyMem.max - c.carrierHeld
	if input < want/responsesWorkingSet {
		want = input * responsesWorkingSet
	}
	extra := want - req.held
	if extra <= 0 {
		return nil
	}
	if !g.bodyMem.acquire(ctx, extra, g.now().Add(g.opts.BodyMemoryWait)) {
		return &providers.APIError{Status: http.StatusServiceUnavailable, Code: "body_memory_full", RetryAfter: "1",
			Message: g.memoryFull}
	}
	req.held += extra
	return nil
}
