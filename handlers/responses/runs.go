// Package responses is the Responses API's stored state on top of the
// core: responses a key kept (store: true), the history a turn refers to
// (previous_response_id, item references, a conversation), the
// Conversations API's items, background runs and their event logs, and
// the replay of a stored or running response as events. The core calls
// it through a small interface (resolve a turn's history, keep a finished
// response); the ways in that serve a background run or answer a stored
// response are adapters in handlers.
package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/providers"
)

// DefaultMaxPerKey bounds the background responses one key may have
// running on one instance when the gateway sets no limit of its own.
const DefaultMaxPerKey = 8

// maxEvents bounds the event bytes one running background response keeps
// for live replay; past it, a replay reads the stored row.
const maxEvents = 16 << 20

// Runs is the background responses running on this instance. It outlives
// one gateway's config (the caller keeps it across reloads), so a reload
// can still cancel them.
type Runs struct {
	mu     sync.Mutex
	runs   map[string]*Run
	perKey map[string]int
}

// NewRuns returns an empty registry.
func NewRuns() *Runs {
	return &Runs{runs: map[string]*Run{}, perKey: map[string]int{}}
}

// Run is one background response in progress.
type Run struct {
	// ID and Key are the response's id and the key that created it;
	// Created is the time its client was answered with.
	ID, Key string
	Created int64
	cancel  context.CancelFunc
	done    chan struct{}

	mu        sync.Mutex
	cancelled bool
	events    [][]byte // each event's data, as sent
	size      int
	overflow  bool          // events past maxEvents were not kept
	changed   chan struct{} // closed and replaced when an event is added
}

// NewRun is the run of response id under key, stopped by cancel.
func NewRun(id, key string, created int64, cancel context.CancelFunc) *Run {
	return &Run{ID: id, Key: key, Created: created, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
}

// Start registers a run unless key already has max running.
func (b *Runs) Start(run *Run, max int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.perKey[run.Key] >= max {
		return false
	}
	b.perKey[run.Key]++
	b.runs[run.ID] = run
	return true
}

// Finish removes a run Start registered.
func (b *Runs) Finish(run *Run) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.runs, run.ID)
	if b.perKey[run.Key]--; b.perKey[run.Key] <= 0 {
		delete(b.perKey, run.Key)
	}
}

// Get is the run of id under key, or nil.
func (b *Runs) Get(key, id string) *Run {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if run := b.runs[id]; run != nil && run.Key == key {
		return run
	}
	return nil
}

// Stop cancels the run's upstream call.
func (run *Run) Stop() {
	run.mu.Lock()
	run.cancelled = true
	run.mu.Unlock()
	run.cancel()
}

// Cancelled reports whether Stop was called.
func (run *Run) Cancelled() bool {
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.cancelled
}

// Done is closed when the run has ended (End).
func (run *Run) Done() <-chan struct{} { return run.done }

// End marks the run ended and releases its context.
func (run *Run) End() {
	run.cancel()
	close(run.done)
}

// Out is what a replay writes to: any of the core's sinks (the HTTP
// door's, a WebSocket's).
type Out interface {
	Header() http.Header
	Start(status int)
	Write(p []byte) error
	Flush() error
}

// RunSink is where a background response's run is answered: its events
// are kept for replay; an answer that is not a stream (an error) is kept
// for the failed Response.
type RunSink struct {
	run    *Run
	header http.Header
	status int
	body   bytes.Buffer
	events Events
}

// NewRunSink is the sink run's call is served into.
func NewRunSink(run *Run) *RunSink { return &RunSink{run: run, header: http.Header{}} }

// Header is the answer's header.
func (b *RunSink) Header() http.Header { return b.header }

// Start keeps the answer's status.
func (b *RunSink) Start(code int) {
	if b.status == 0 {
		b.status = code
	}
}

// Fail keeps the error the run was answered with, as the body of the
// failed Response's error.
func (b *RunSink) Fail(e *apierror.Error) {
	if b.status != 0 {
		return
	}
	b.status = e.Status
	b.body.Write(e.Body(providers.FormatResponses))
}

// Write keeps a stream's events for replay, or an answer's first 64 KiB.
func (b *RunSink) Write(p []byte) error {
	if b.status == 0 {
		b.Start(http.StatusOK)
	}
	if b.status != http.StatusOK || !strings.HasPrefix(b.header.Get("Content-Type"), "text/event-stream") {
		if b.body.Len() < 64<<10 {
			b.body.Write(p)
		}
		return nil
	}
	b.events.Add(p)
	for data, ok := b.events.Next(false); ok; data, ok = b.events.Next(false) {
		b.event(data)
	}
	return nil
}

// Flush does nothing: events are kept as they are written.
func (b *RunSink) Flush() error { return nil }

// event keeps one event's data for replay.
func (b *RunSink) event(data []byte) {
	run := b.run
	run.mu.Lock()
	if run.size+len(data) <= maxEvents && !run.overflow {
		run.events = append(run.events, append([]byte(nil), data...))
		run.size += len(data)
	} else {
		run.overflow = true
	}
	close(run.changed)
	run.changed = make(chan struct{})
	run.mu.Unlock()
}

// failure is the error object of a background response that did not
// finish: the error answer the gateway gave, or the failed event's.
func (b *RunSink) failure() json.RawMessage {
	var e struct {
		Error struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if b.body.Len() > 0 && json.Unmarshal(b.body.Bytes(), &e) == nil && e.Error.Message != "" {
		code, _ := e.Error.Code.(string)
		if code == "" {
			code = "server_error"
		}
		out, _ := json.Marshal(map[string]string{"code": code, "message": e.Error.Message})
		return out
	}
	out, _ := json.Marshal(map[string]string{"code": "server_error", "message": "the background response ended without finishing; see the gateway's ledger for this request"})
	return out
}

// Replay streams a running background response's events after sequence
// number after, then its live tail until it ends. It reports false when
// the run's events were not all kept (the caller replays the stored row
// instead).
func (run *Run) Replay(ctx context.Context, out Out, after int) bool {
	run.mu.Lock()
	overflow := run.overflow
	run.mu.Unlock()
	if overflow {
		return false
	}
	h := out.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	out.Start(http.StatusOK)
	next := 0
	for {
		run.mu.Lock()
		evs := run.events[next:]
		changed := run.changed
		run.mu.Unlock()
		for _, data := range evs {
			next++
			var head struct {
				Type string `json:"type"`
				Seq  *int   `json:"sequence_number"`
			}
			_ = json.Unmarshal(data, &head)
			if head.Seq != nil && *head.Seq <= after {
				continue
			}
			if err := out.Write([]byte("event: " + head.Type + "\ndata: ")); err != nil {
				return true
			}
			_ = out.Write(data)
			_ = out.Write([]byte("\n\n"))
		}
		_ = out.Flush()
		select {
		case <-changed:
		case <-run.done:
			// Whatever came before done is in events; one more pass
			// sends it.
			run.mu.Lock()
			rest := len(run.events) > next
			run.mu.Unlock()
			if !rest {
				return true
			}
		case <-ctx.Done():
			return true
		}
	}
}
