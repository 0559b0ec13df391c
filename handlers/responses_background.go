package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// A Responses request with background: true is answered at once with the
// Response in status queued; the gateway then serves it as an ordinary
// streamed request on a context detached from the client's connection,
// through the same path (auth identity, budgets, limits, alias timeout,
// fallbacks, ledger: one record, with its real usage and outcome). Its
// events are kept in memory while it runs, so GET ?stream=true on the
// instance running it replays them with their original sequence numbers
// and then follows the live tail. The stored row (every instance on the
// ledger database reads it) goes queued → in_progress → its final status.
//
// Cancel stops the upstream call by cancelling that context. Another
// instance cannot reach the context, so it marks the stored row
// cancelled; the instance running it reads its row every
// backgroundPoll and stops when it sees that.

// DefaultMaxBackgroundPerKey bounds the background responses one key may
// have running on one instance when GatewayOptions.MaxBackgroundPerKey is 0.
const DefaultMaxBackgroundPerKey = 8

// backgroundPoll is how often a running background response checks its
// stored row for a cancel from another instance.
const backgroundPoll = time.Second

// backgroundLease is how long a background response's stored row stays
// claimed by the instance running it without a renewal; that instance
// renews it every backgroundRenew. A row whose lease lapsed was left by an
// instance that stopped (crashed, killed, lost its database): the next
// instance to read it marks it failed, so pollers end within
// backgroundLease of the crash.
const (
	backgroundLease = 15 * time.Second
	backgroundRenew = 5 * time.Second
)

// maxBackgroundEvents bounds the event bytes one running background
// response keeps for live replay; past it, a replay reads the stored row.
const maxBackgroundEvents = 16 << 20

// bgRuns is the background responses running on this instance.
type bgRuns struct {
	mu     sync.Mutex
	runs   map[string]*bgRun
	perKey map[string]int
}

func newBGRuns() *bgRuns {
	return &bgRuns{runs: map[string]*bgRun{}, perKey: map[string]int{}}
}

// bgRun is one background response in progress.
type bgRun struct {
	id, key string
	created int64
	cancel  context.CancelFunc
	done    chan struct{}

	mu        sync.Mutex
	cancelled bool
	events    [][]byte // each event's data, as sent
	size      int
	overflow  bool          // events past maxBackgroundEvents were not kept
	changed   chan struct{} // closed and replaced when an event is added
}

// start registers a run unless key already has max running.
func (b *bgRuns) start(run *bgRun, max int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.perKey[run.key] >= max {
		return false
	}
	b.perKey[run.key]++
	b.runs[run.id] = run
	return true
}

func (b *bgRuns) finish(run *bgRun) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.runs, run.id)
	if b.perKey[run.key]--; b.perKey[run.key] <= 0 {
		delete(b.perKey, run.key)
	}
}

// get is the run of id under key, or nil.
func (b *bgRuns) get(key, id string) *bgRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	if run := b.runs[id]; run != nil && run.key == key {
		return run
	}
	return nil
}

func (g *Gateway) maxBackground() int {
	if g.opts.MaxBackgroundPerKey > 0 {
		return g.opts.MaxBackgroundPerKey
	}
	return DefaultMaxBackgroundPerKey
}

// startBackground starts serving a background request detached from the
// client and answers it with its queued Response. With stream: true it
// returns follow instead, which streams the run's events from its
// creation (response.created names the id), as OpenAI does; the run goes
// on if the client leaves, and GET ?stream=true&starting_after= resumes.
// The caller gives the request's body memory back before following, which
// lasts as long as the run.
func (g *Gateway) startBackground(ctx context.Context, c *Call, out Sink, body []byte, t *providers.ResponsesTurn) (follow func()) {
	rs := g.responseStore()
	if rs == nil {
		out.Fail(&providers.APIError{Status: http.StatusBadRequest, Param: "background",
			Message: "background responses are kept in the gateway's responses store, and this gateway has no ledger database; send the request without background"})
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		out.Fail(&providers.APIError{Status: http.StatusBadRequest, Message: "request body must be a JSON object"})
		return nil
	}
	fields["stream"] = json.RawMessage("true")
	delete(fields, "stream_options")
	inner, _ := json.Marshal(fields)

	key := keyOf(c.Identity)
	run := &bgRun{id: t.ID, key: key, created: t.Created, done: make(chan struct{}), changed: make(chan struct{})}
	// The run keeps the request's values (trace) but not its
	// cancellation: the client may go once it has the id. Its cancel
	// exists before anyone can find the run.
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	run.cancel = rcancel
	if !g.states.bg.start(run, g.maxBackground()) {
		rcancel()
		out.Fail(&providers.APIError{Status: http.StatusTooManyRequests, RetryAfter: "5", Code: "background_limit",
			Message: fmt.Sprintf("key %q already has %d background responses running on this gateway, its limit; wait for one to finish or cancel one", key, g.maxBackground())})
		return nil
	}
	queued := t.QueuedObject()
	sctx, cancel := context.WithTimeout(ctx, stateTimeout)
	err := rs.PutResponse(sctx, ledger.StoredResponse{ID: t.ID, KeyID: key, Model: t.Alias, Created: time.Unix(t.Created, 0),
		Response: queued, LeaseUntil: g.now().Add(backgroundLease)})
	cancel()
	if err != nil {
		g.states.bg.finish(run)
		rcancel()
		out.Fail(stateUnavailable(err))
		return nil
	}

	// The run is a call of its own: the create's, with the body that
	// streams and the run it belongs to; its caller is identified again
	// when it starts.
	rc := *c
	rc.Body, rc.source, rc.run, rc.carrierHeld, rc.req = inner, nil, run, 0, clientRequest{}
	rc.Client = c.Client.Clone()
	go g.runBackground(rctx, run, &rc, rs)

	if t.Req.Stream {
		return func() {
			if !replayRun(ctx, out, run, -1) {
				// Its events outgrew what a run keeps: the stored row.
				sctx, cancel := context.WithTimeout(ctx, stateTimeout)
				defer cancel()
				if stored, err := rs.GetResponse(sctx, key, run.id); err == nil {
					replayResponse(out, stored.Response, -1)
				}
			}
		}
	}
	sinkJSON(out, http.StatusOK, queued)
	return nil
}

// runBackground serves a background response's call c to its end on ctx,
// the run's, and leaves its final state in the store.
func (g *Gateway) runBackground(ctx context.Context, run *bgRun, c *Call, rs ledger.ResponseStore) {
	defer close(run.done)
	defer g.states.bg.finish(run)
	defer run.cancel()
	go g.watchCancel(run, rs)
	// It runs from now: every instance polling it says so, not queued.
	g.markInProgress(run, rs)

	bw := &bgSink{run: run, header: http.Header{}}
	// Its start is admitted as the key stands now, not as it stood at
	// the create.
	if id, refusal := c.caller.identify(); refusal != nil {
		bw.Fail(refusal)
	} else {
		c.Identity = id
		g.Serve(ctx, c, bw)
	}

	// The turn stored its Response itself if it completed; anything else
	// (cancelled, failed, an error answer) is written here.
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	stored, err := rs.GetResponse(ctx, run.key, run.id)
	if err != nil {
		return
	}
	var cur map[string]json.RawMessage
	if json.Unmarshal(stored.Response, &cur) != nil {
		return
	}
	var status string
	_ = json.Unmarshal(cur["status"], &status)
	run.mu.Lock()
	cancelled := run.cancelled
	run.mu.Unlock()
	switch {
	case status != "queued" && status != "in_progress" && !(cancelled && status != "cancelled"):
		return
	case cancelled || status == "cancelled":
		if status == "completed" || status == "incomplete" {
			// It finished before the cancel reached it.
			return
		}
		cur["status"] = json.RawMessage(`"cancelled"`)
	default:
		cur["status"] = json.RawMessage(`"failed"`)
		cur["error"] = bw.failure()
	}
	b, _ := json.Marshal(cur)
	stored.Response, stored.LeaseUntil = b, time.Time{}
	if err := rs.PutResponse(ctx, stored); err != nil {
		g.obs.Attempt(Attempt{Alias: stored.Model, Err: "response_store: " + err.Error()})
	}
}

// markInProgress moves run's stored row from queued to in_progress.
func (g *Gateway) markInProgress(run *bgRun, rs ledger.ResponseStore) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	stored, err := rs.GetResponse(ctx, run.key, run.id)
	if err != nil || storedStatus(stored.Response) != "queued" {
		return
	}
	var cur map[string]json.RawMessage
	if json.Unmarshal(stored.Response, &cur) != nil {
		return
	}
	cur["status"] = json.RawMessage(`"in_progress"`)
	stored.Response, _ = json.Marshal(cur)
	stored.LeaseUntil = g.now().Add(backgroundLease)
	_ = rs.PutResponse(ctx, stored)
}

// watchCancel stops run when another instance marked its stored row
// cancelled, and renews the row's lease while the run goes on.
func (g *Gateway) watchCancel(run *bgRun, rs ledger.ResponseStore) {
	tick := time.NewTicker(backgroundPoll)
	defer tick.Stop()
	renew := time.NewTicker(backgroundRenew)
	defer renew.Stop()
	for {
		select {
		case <-run.done:
			return
		case <-renew.C:
			ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
			_ = rs.RenewResponse(ctx, run.key, run.id, g.now().Add(backgroundLease))
			cancel()
			continue
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
		stored, err := rs.GetResponse(ctx, run.key, run.id)
		cancel()
		if err == nil && storedStatus(stored.Response) == "cancelled" {
			run.stop()
			return
		}
	}
}

// settleLapsed is stored as it is now: a background response still
// queued or in_progress whose lease lapsed was left by an instance that
// stopped, and is marked failed here (once, whichever instance reads it
// first), so that pollers end.
func (g *Gateway) settleLapsed(ctx context.Context, rs ledger.ResponseStore, stored ledger.StoredResponse) ledger.StoredResponse {
	if stored.LeaseUntil.IsZero() || !g.now().After(stored.LeaseUntil) || g.states.bg.get(stored.KeyID, stored.ID) != nil {
		return stored
	}
	b := stored.Response
	if s := storedStatus(stored.Response); s == "queued" || s == "in_progress" {
		var cur map[string]json.RawMessage
		if json.Unmarshal(stored.Response, &cur) != nil {
			return stored
		}
		cur["status"] = json.RawMessage(`"failed"`)
		cur["error"] = json.RawMessage(`{"code":"server_error","message":"the gateway instance running this background response stopped before it finished; create the response again"}`)
		b, _ = json.Marshal(cur)
	}
	// A finished one (cancelled from another instance while its own was
	// gone) only loses the lease, so the sweep does not find it again.
	done, err := rs.ReplaceLapsed(ctx, stored.KeyID, stored.ID, stored.LeaseUntil, b)
	switch {
	case err != nil:
		return stored
	case !done:
		// Renewed, finished or failed by another reader meanwhile.
		if now, err := rs.GetResponse(ctx, stored.KeyID, stored.ID); err == nil {
			return now
		}
		return stored
	}
	stored.Response, stored.LeaseUntil = b, time.Time{}
	return stored
}

// sweepLapsed marks failed, every backgroundLease, the background
// responses whose instance stopped and that no one has read since, so
// that the store says what became of them; until ctx ends.
func (g *Gateway) sweepLapsed(ctx context.Context) { g.sweepLapsedEvery(ctx, backgroundLease) }

func (g *Gateway) sweepLapsedEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rs := g.responseStore()
		if rs == nil {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, stateTimeout)
		lapsed, _ := rs.LapsedResponses(sctx, g.now(), maxSweep)
		for _, stored := range lapsed {
			g.settleLapsed(sctx, rs, stored)
		}
		cancel()
	}
}

// maxSweep bounds the responses one sweep settles; the next takes the
// rest.
const maxSweep = 100

// stop cancels the run's upstream call.
func (run *bgRun) stop() {
	run.mu.Lock()
	run.cancelled = true
	run.mu.Unlock()
	run.cancel()
}

func storedStatus(resp json.RawMessage) string {
	var s struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(resp, &s)
	return s.Status
}

// bgSink is where a background response's run is answered: its events
// are kept for replay; an answer that is not a stream (an error) is kept
// for the failed Response.
type bgSink struct {
	run     *bgRun
	header  http.Header
	status  int
	body    bytes.Buffer
	pending []byte
}

func (b *bgSink) Header() http.Header { return b.header }

func (b *bgSink) Start(code int) {
	if b.status == 0 {
		b.status = code
	}
}

// Fail keeps the error the run was answered with, as the body of the
// failed Response's error.
func (b *bgSink) Fail(e *apierror.Error) {
	if b.status != 0 {
		return
	}
	b.status = e.Status
	b.body.Write(e.Body(providers.FormatResponses))
}

func (b *bgSink) Write(p []byte) error {
	if b.status == 0 {
		b.Start(http.StatusOK)
	}
	if b.status != http.StatusOK || !strings.HasPrefix(b.header.Get("Content-Type"), "text/event-stream") {
		if b.body.Len() < 64<<10 {
			b.body.Write(p)
		}
		return nil
	}
	b.pending = append(b.pending, p...)
	for {
		i := bytes.Index(b.pending, []byte("\n\n"))
		if i < 0 {
			break
		}
		ev := b.pending[:i]
		b.pending = b.pending[i+2:]
		if data := bgEventData(ev); len(data) > 0 {
			b.event(data)
		}
	}
	return nil
}

// Flush does nothing: events are kept as they are written.
func (b *bgSink) Flush() error { return nil }

// event keeps one event's data for replay.
func (b *bgSink) event(data []byte) {
	run := b.run
	run.mu.Lock()
	if run.size+len(data) <= maxBackgroundEvents && !run.overflow {
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
func (b *bgSink) failure() json.RawMessage {
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

// bgEventData is the data of one SSE event.
func bgEventData(ev []byte) []byte {
	var data []byte
	for _, line := range bytes.Split(ev, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		}
	}
	if bytes.Equal(data, []byte("[DONE]")) {
		return nil
	}
	return data
}

// cancelBackground answers POST /v1/responses/{id}/cancel for a stored
// response of the calling key.
func (g *Gateway) cancelBackground(w http.ResponseWriter, r *http.Request, rs ledger.ResponseStore, stored ledger.StoredResponse) {
	cf := providers.FormatResponses
	var head struct {
		Status     string `json:"status"`
		Background bool   `json:"background"`
	}
	_ = json.Unmarshal(stored.Response, &head)
	if !head.Background {
		(&providers.APIError{Status: http.StatusBadRequest, Param: "response_id", Code: "invalid_request",
			Message: fmt.Sprintf("Response %q was not created with background=true and cannot be cancelled.", stored.ID)}).Write(w, cf)
		return
	}
	switch head.Status {
	case "cancelled":
		// Cancelling again answers the cancelled Response.
		writeJSON(w, http.StatusOK, stored.Response)
		return
	case "queued", "in_progress":
	default:
		(&providers.APIError{Status: http.StatusBadRequest, Param: "response_id", Code: "invalid_request",
			Message: fmt.Sprintf("Cannot cancel a response in status %s; only a queued or in_progress background response can be cancelled.", head.Status)}).Write(w, cf)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), stateTimeout)
	defer cancel()
	if run := g.states.bg.get(stored.KeyID, stored.ID); run != nil {
		run.stop()
		select {
		case <-run.done:
		case <-ctx.Done():
		}
	} else {
		// Another instance runs it: mark the row; that instance stops
		// the call when it reads the mark (backgroundPoll).
		var cur map[string]json.RawMessage
		_ = json.Unmarshal(stored.Response, &cur)
		cur["status"] = json.RawMessage(`"cancelled"`)
		stored.Response, _ = json.Marshal(cur)
		if err := rs.PutResponse(ctx, stored); err != nil {
			stateUnavailable(err).Write(w, cf)
			return
		}
		writeJSON(w, http.StatusOK, stored.Response)
		return
	}
	now, err := rs.GetResponse(ctx, stored.KeyID, stored.ID)
	if err != nil {
		stateUnavailable(err).Write(w, cf)
		return
	}
	writeJSON(w, http.StatusOK, now.Response)
}

// replayRun streams a running background response's events after
// sequence number after, then its live tail until it ends. It reports
// false when the run's events were not all kept (the caller replays the
// stored row instead).
func replayRun(ctx context.Context, out Sink, run *bgRun, after int) bool {
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
