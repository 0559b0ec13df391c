package policy

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"
)

// What an instance holds of a shared counter, so that a busy key's
// requests are admitted without a round trip each (three per request
// cost more CPU in Redis and in the gateway than the whole proxying).
//
// Slots: while other requests of its scope still run here, a
// max_parallel slot an ended request held stays with the instance for
// slotLinger, for the next request of the scope to take locally; one no
// request took by then goes back to the shared counter, and the last
// request out gives back every idle slot at once.
// The shared counter still holds one lease per slot, renewed while held,
// so a killed instance's slots come back within a lease as before.
//
// Windows: with a ChunkCounter (Redis), requests and tokens of the
// current minute are taken in chunks (see ratecount's chunk script: at
// most an eighth of what is left, exactly one request's need near the
// limit) and admitted from locally; a request's settlement goes to the
// chunk first; what is left unused is given back after chunkIdle.

// ChunkCounter is a shared RateCounter that hands out parts of a window.
type ChunkCounter interface {
	RateCounter
	// TakeChunk counts at least needReqs requests and needTokens tokens
	// in scope's window, and up to wantReqs and wantTokens, unless the
	// needs would pass rpm or tpm (0: no limit); it returns the window's
	// counts after the grant and what was granted.
	TakeChunk(ctx context.Context, scope string, window, rpm, tpm, needReqs, needTokens, wantReqs, wantTokens int64) (reqs, tokens, gotReqs, gotTokens int64, ok bool, err error)
	// GiveBack uncounts what a chunk left unused; id makes a retry count
	// once.
	GiveBack(ctx context.Context, scope string, window, reqs, tokens int64, id string) error
}

const (
	// slotLinger is how long a freed slot waits for this instance's next
	// request (while others of its scope still run here) before it goes
	// back: long enough that a busy key's ebb and flow of requests in
	// progress reuses its slots (20 ms still gave back and took again
	// one slot in twenty under the bench's load), short enough that
	// another instance waits on an idle one no longer than a slow answer.
	slotLinger = 100 * time.Millisecond
	// chunkIdle is how long a window's unused chunk stays with an
	// instance that admits nothing on it.
	chunkIdle = time.Second
	// maxChunk bounds the requests of one chunk.
	maxChunk = 512
)

// heldScope is what this instance holds of one scope in the shared
// counter.
type heldScope struct {
	rl   *RateLimits
	name string

	mu sync.Mutex
	// Slots: every lease held in the shared counter, those no request
	// uses (with when they were freed), and whether timers are set.
	held      map[string]struct{}
	free      []freeSlot
	inUse     int64
	lingering bool
	// Slots taken in the second that began at second, and in the one
	// before it: how hot the scope is.
	second                 time.Time
	thisSecond, lastSecond int64
	renewing               *time.Timer
	// The window chunk: its minute, what is left of it here, the counts
	// the shared counter answered at the last grant, the size to ask
	// for next, and the clock of grants and admissions.
	win                  int64
	leftReqs, leftTokens int64
	seenReqs, seenTokens int64
	want                 int64
	granted, used        time.Time
	returning            bool
}

// hotAdmissions is how many requests a second make a scope hot: its
// freed slots linger even when none of its requests is running here,
// because the next one is a few milliseconds away.
const hotAdmissions = 50

// countAdmission counts a slot taken in the current second; the caller
// holds h.mu.
func (h *heldScope) countAdmission() {
	if now := h.rl.now(); now.Sub(h.second) >= time.Second {
		h.lastSecond = h.thisSecond
		if now.Sub(h.second) >= 2*time.Second {
			h.lastSecond = 0
		}
		h.second, h.thisSecond = now, 0
	}
	h.thisSecond++
}

// hotLocked: the scope took hotAdmissions slots within about a second.
func (h *heldScope) hotLocked() bool {
	return h.thisSecond >= hotAdmissions || (h.lastSecond >= hotAdmissions && h.rl.now().Sub(h.second) < time.Second)
}

type freeSlot struct {
	lease string
	since time.Time
}

// heldScope returns the scope's holdings, adding them if missing.
func (rl *RateLimits) heldScope(name string) *heldScope {
	rl.heldMu.Lock()
	defer rl.heldMu.Unlock()
	h, ok := rl.holdings[name]
	if !ok {
		if len(rl.holdings) > 100000 {
			// Forget scopes holding nothing, so a churn of keys cannot
			// grow the map (a scope dropped here while its last request
			// ends still has that request's pointer, and settles there).
			for k, v := range rl.holdings {
				if v.mu.TryLock() {
					if v.idleLocked() {
						delete(rl.holdings, k)
					}
					v.mu.Unlock()
				}
			}
		}
		h = &heldScope{rl: rl, name: name, held: map[string]struct{}{}, want: 1}
		rl.holdings[name] = h
	}
	return h
}

// dropIfIdleLocked forgets a scope that holds nothing, so a churn of keys
// cannot grow the map; the caller holds h.mu.
func (h *heldScope) dropIfIdleLocked() {
	if !h.idleLocked() {
		return
	}
	h.rl.heldMu.Lock()
	if h.rl.holdings[h.name] == h {
		delete(h.rl.holdings, h.name)
	}
	h.rl.heldMu.Unlock()
}

// idleLocked: the scope holds nothing and has nothing scheduled.
func (h *heldScope) idleLocked() bool {
	return len(h.held) == 0 && h.inUse == 0 && h.leftReqs <= 0 && h.leftTokens <= 0 && !h.lingering && !h.returning
}

// takeSlot gives the request a held slot no request uses, or takes a new
// one from c; ok false: max slots are in use.
func (h *heldScope) takeSlot(ctx context.Context, c RateCounter, hold *RateHold, max int64) (slot string, ok bool, err error) {
	h.mu.Lock()
	if h.inUse >= max {
		h.mu.Unlock()
		return "", false, nil
	}
	h.countAdmission()
	if n := len(h.free); n > 0 {
		slot = h.free[n-1].lease
		h.free = h.free[:n-1]
		h.inUse++
		h.mu.Unlock()
		return slot, true, nil
	}
	h.inUse++ // counted while the shared counter is asked
	h.mu.Unlock()
	lease := hold.id()
	ok, err = c.Acquire(ctx, h.name, lease, max, h.rl.lease)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil || !ok {
		h.inUse--
		return "", ok, err
	}
	h.held[lease] = struct{}{}
	if h.renewing == nil {
		h.renewing = time.AfterFunc(h.rl.lease/2, h.renew)
	}
	return lease, true, nil
}

// putSlot is a request's end. While other requests of the scope run here,
// or its scope is hot, its slot waits slotLinger for the next one;
// otherwise the last one out gives back every slot the scope holds idle,
// at once, as a release always did (a key used now and then keeps
// nothing between requests, so another instance never waits on it). It
// returns the leases to release.
func (h *heldScope) putSlot(slot string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.held[slot]; !ok {
		return nil
	}
	h.inUse--
	if h.inUse == 0 && !h.hotLocked() {
		back := []string{slot}
		delete(h.held, slot)
		for _, f := range h.free {
			back = append(back, f.lease)
			delete(h.held, f.lease)
		}
		h.free = h.free[:0]
		if len(h.held) == 0 && h.renewing != nil {
			h.renewing.Stop()
			h.renewing = nil
		}
		return back
	}
	h.free = append(h.free, freeSlot{lease: slot, since: h.rl.now()})
	if !h.lingering {
		h.lingering = true
		time.AfterFunc(slotLinger, h.returnSlots)
	}
	return nil
}

// returnSlots gives back the slots no request took within slotLinger.
func (h *heldScope) returnSlots() {
	h.mu.Lock()
	now := h.rl.now()
	var back []string
	keep := h.free[:0]
	for _, f := range h.free {
		if now.Sub(f.since) >= slotLinger {
			back = append(back, f.lease)
			delete(h.held, f.lease)
			continue
		}
		keep = append(keep, f)
	}
	h.free = keep
	if len(h.free) > 0 {
		time.AfterFunc(slotLinger, h.returnSlots)
	} else {
		h.lingering = false
	}
	if len(h.held) == 0 && h.renewing != nil {
		h.renewing.Stop()
		h.renewing = nil
	}
	h.dropIfIdleLocked()
	h.mu.Unlock()
	if len(back) == 0 {
		return
	}
	ops := make([]rateOp, len(back))
	for i, lease := range back {
		ops[i] = rateOp{c: h.rl.shared, scope: h.name, lease: lease, until: time.Now().Add(h.rl.lease)}
	}
	h.rl.runOps(ops)
}

// renew extends every slot held, every half lease while any is.
func (h *heldScope) renew() {
	h.mu.Lock()
	leases := make([]string, 0, len(h.held))
	for l := range h.held {
		leases = append(leases, l)
	}
	h.mu.Unlock()
	for _, l := range leases {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := h.rl.shared.Renew(ctx, h.name, l, h.rl.lease); err != nil {
			h.rl.failed(err)
		}
		cancel()
	}
	h.mu.Lock()
	if len(h.held) > 0 && h.renewing != nil {
		h.renewing.Reset(h.rl.lease / 2)
	}
	h.mu.Unlock()
}

// takeWindow admits one request reserving reserve tokens in window from
// the chunk, taking a new chunk from c when this one cannot cover it;
// it returns the window's counts as this instance knows them.
func (h *heldScope) takeWindow(ctx context.Context, c ChunkCounter, window, rpm, tpm, reserve int64) (reqs, tokens int64, ok bool, err error) {
	h.mu.Lock()
	now := h.rl.now()
	if h.win != window {
		// A new minute: the old chunk ended with its window.
		h.win, h.leftReqs, h.leftTokens, h.seenReqs, h.seenTokens = window, 0, 0, 0, 0
	}
	h.used = now
	if h.leftReqs >= 1 && h.leftTokens >= reserve {
		h.leftReqs--
		h.leftTokens -= reserve
		reqs, tokens = h.seenReqs-h.leftReqs, h.seenTokens-h.leftTokens
		h.mu.Unlock()
		return reqs, tokens, true, nil
	}
	// Chunks grow while they run out fast and shrink when they last.
	switch since := now.Sub(h.granted); {
	case since < 100*time.Millisecond:
		h.want = min(2*h.want, maxChunk)
	case since > time.Second:
		h.want = max(1, h.want/2)
	}
	// What is left here goes to this request, and the shared counter is
	// asked for the rest: requests admitted meanwhile cannot draw on it
	// too (that would admit them both on the same tokens).
	haveReqs, haveTokens := h.leftReqs, h.leftTokens
	h.leftReqs, h.leftTokens = 0, 0
	needReqs, needTokens := 1-haveReqs, reserve-haveTokens
	wantReqs := h.want
	// An admin may set a tpm near int64's limit: the product must not
	// wrap negative (Redis caps the grant at the window's room anyway).
	wantTokens := min(reserve, math.MaxInt64/maxChunk) * h.want
	h.mu.Unlock()
	r, t, gotReqs, gotTokens, ok, err := c.TakeChunk(ctx, h.name, window, rpm, tpm, needReqs, needTokens, wantReqs, wantTokens)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.win != window {
		// The minute turned while asking: what was left went with the
		// old window, and the grant counts there, where the request is
		// admitted.
		return r, t, ok && err == nil, err
	}
	if err != nil || !ok {
		h.leftReqs += haveReqs
		h.leftTokens += haveTokens
		return r, t, false, err
	}
	h.granted = h.rl.now()
	h.seenReqs, h.seenTokens = r, t
	h.leftReqs += haveReqs + gotReqs - 1
	h.leftTokens += haveTokens + gotTokens - reserve
	if (h.leftReqs > 0 || h.leftTokens > 0) && !h.returning {
		h.returning = true
		time.AfterFunc(chunkIdle, h.giveBack)
	}
	return h.seenReqs - h.leftReqs, h.seenTokens - h.leftTokens, true, nil
}

// settle puts a request's token count right: n is its real count less
// its reservation. What it used less goes back to the chunk; what more,
// the chunk covers as far as it can and the shared counter takes the
// rest, returned as the amount still owed.
func (h *heldScope) settle(window, n int64) (owed int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.win != window {
		return max(0, n)
	}
	if n <= 0 {
		h.leftTokens -= n
		return 0
	}
	take := min(n, max(0, h.leftTokens))
	h.leftTokens -= take
	return n - take
}

// giveBack returns a chunk no request has drawn on for chunkIdle.
func (h *heldScope) giveBack() {
	h.mu.Lock()
	now := h.rl.now()
	if idle := now.Sub(h.used); idle < chunkIdle && h.win == now.Unix()/60*60 {
		time.AfterFunc(chunkIdle-idle, h.giveBack)
		h.mu.Unlock()
		return
	}
	h.returning = false
	win, reqs, tokens := h.win, h.leftReqs, h.leftTokens
	h.leftReqs, h.leftTokens = 0, 0
	h.want = 1
	h.dropIfIdleLocked()
	h.mu.Unlock()
	if win != now.Unix()/60*60 || (reqs <= 0 && tokens <= 0) {
		return // the window ended: its counts went with it
	}
	id := h.rl.instance + "-g" + strconv.FormatUint(h.rl.seq.Add(1), 36)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := h.rl.shared.(ChunkCounter).GiveBack(ctx, h.name, win, reqs, tokens, id); err != nil {
		h.rl.failed(err)
	}
}

// Flush gives back at once every slot no request uses and every unused
// chunk, as a stopping instance (a config reload) should: they would
// otherwise stay counted until their timers or leases ran out. Slots in
// use go back as their requests end.
func (rl *RateLimits) Flush() {
	if rl == nil || rl.shared == nil {
		return
	}
	rl.heldMu.Lock()
	scopes := make([]*heldScope, 0, len(rl.holdings))
	for _, h := range rl.holdings {
		scopes = append(scopes, h)
	}
	rl.heldMu.Unlock()
	var ops []rateOp
	for _, h := range scopes {
		h.mu.Lock()
		for _, f := range h.free {
			delete(h.held, f.lease)
			ops = append(ops, rateOp{c: rl.shared, scope: h.name, lease: f.lease, until: time.Now().Add(rl.lease)})
		}
		h.free = h.free[:0]
		win, reqs, tokens := h.win, h.leftReqs, h.leftTokens
		h.leftReqs, h.leftTokens = 0, 0
		h.mu.Unlock()
		if cc, ok := rl.shared.(ChunkCounter); ok && (reqs > 0 || tokens > 0) && win == rl.now().Unix()/60*60 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := cc.GiveBack(ctx, h.name, win, reqs, tokens, rl.instance+"-g"+strconv.FormatUint(rl.seq.Add(1), 36)); err != nil {
				rl.failed(err)
			}
			cancel()
		}
	}
	if len(ops) > 0 {
		rl.runOps(ops)
	}
}
