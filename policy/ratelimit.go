package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
)

// Rate limits per key and per workspace: requests and tokens per minute
// (windows aligned to the minute) and requests in progress. Counted in a
// shared RateCounter (Redis, when `limits redis` is set) so every
// instance sees one count, else in this process; a shared counter that
// fails leaves the process's own counts in force until it answers again.
//
// A request reserves its bounded token estimate in the current window as
// it is admitted, so concurrent requests cannot pass a tpm between them,
// and settles to its real count when it ends, in the window it reserved
// in. A request in progress holds a lease on a max_parallel slot: renewed
// while it is held, released when it ends (on a busy key, a little later:
// ratelease.go), and expiring by itself when its holder is gone, so a
// crashed instance or a lost release costs a busy key its capacity for at
// most one lease. With a shared counter an instance takes window counts
// in chunks and keeps slots between requests (ratelease.go).

// RateCounter counts one-minute windows and requests in progress per
// scope. Implementations are safe for concurrent use.
type RateCounter interface {
	// Take adds one request and reserve tokens to scope's window starting
	// at window (Unix seconds) unless the window already holds rpm
	// requests or the reservation would take its tokens past tpm (0: no
	// limit), and returns the window's counts.
	Take(ctx context.Context, scope string, window, rpm, tpm, reserve int64) (reqs, tokens int64, ok bool, err error)
	// AddTokens settles a finished request in the window it reserved in:
	// n is its real count less its reservation, negative when it used
	// less; the window's count never falls below zero, and a window that
	// has ended is left alone. A non-empty id makes a retried settlement
	// count once.
	AddTokens(ctx context.Context, scope string, window, n int64, id string) error
	// Acquire takes one of scope's max slots for the request holding
	// lease, until it is released or ttl passes without a renewal.
	Acquire(ctx context.Context, scope, lease string, max int64, ttl time.Duration) (ok bool, err error)
	// Renew holds lease's slot for ttl more.
	Renew(ctx context.Context, scope, lease string, ttl time.Duration) error
	// Release gives lease's slot back; releasing twice is releasing once.
	Release(ctx context.Context, scope, lease string) error
}

// DefaultSlotLease is how long a max_parallel slot outlives the last sign
// of its request. A running request renews its lease every half lease
// however long it runs, so the lease bounds only how long the slots of an
// instance that crashed stay taken: well within a minute.
const DefaultSlotLease = 30 * time.Second

// LocalRates is the per-process RateCounter. Its leases expire like the
// shared counter's, so both keep one meaning; within one process a
// release is never lost, so settlement ids are not kept.
type LocalRates struct {
	mu  sync.Mutex
	m   map[string]*rateWindow
	now func() time.Time
}

type rateWindow struct {
	start, reqs, tokens int64
	leases              map[string]time.Time // lease → deadline
}

// NewLocalRates returns an empty per-process counter.
func NewLocalRates() *LocalRates { return newLocalRates(time.Now) }

func newLocalRates(now func() time.Time) *LocalRates {
	return &LocalRates{m: map[string]*rateWindow{}, now: now}
}

// scope returns scope's counts, adding them if missing.
func (l *LocalRates) scope(scope string, window int64) *rateWindow {
	w, ok := l.m[scope]
	if !ok {
		if len(l.m) > 100000 {
			// Drop idle scopes so a churn of keys cannot grow the map.
			for k, v := range l.m {
				if len(v.leases) == 0 && v.start < window {
					delete(l.m, k)
				}
			}
		}
		w = &rateWindow{start: window}
		l.m[scope] = w
	}
	return w
}

func (l *LocalRates) Take(_ context.Context, scope string, window, rpm, tpm, reserve int64) (int64, int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.scope(scope, window)
	if w.start != window {
		w.start, w.reqs, w.tokens = window, 0, 0
	}
	reserve = max(0, reserve)
	if (rpm > 0 && w.reqs >= rpm) || (tpm > 0 && w.tokens+reserve > tpm) {
		return w.reqs, w.tokens, false, nil
	}
	w.reqs++
	w.tokens += reserve
	return w.reqs, w.tokens, true, nil
}

func (l *LocalRates) AddTokens(_ context.Context, scope string, window, n int64, _ string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A window that has ended keeps nothing to settle: touching it would
	// reset the current window's counts.
	if w, ok := l.m[scope]; ok && w.start == window {
		w.tokens = max(0, w.tokens+n)
	}
	return nil
}

func (l *LocalRates) Acquire(_ context.Context, scope, lease string, max int64, ttl time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	w := l.scope(scope, now.Unix()/60*60)
	for k, deadline := range w.leases {
		if !deadline.After(now) {
			delete(w.leases, k)
		}
	}
	if int64(len(w.leases)) >= max {
		return false, nil
	}
	if w.leases == nil {
		w.leases = map[string]time.Time{}
	}
	w.leases[lease] = now.Add(ttl)
	return true, nil
}

func (l *LocalRates) Renew(_ context.Context, scope, lease string, ttl time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Only a lease still held is extended: a renewal that ran after its
	// request's release must not take the slot back.
	if w, ok := l.m[scope]; ok {
		if _, held := w.leases[lease]; held {
			w.leases[lease] = l.now().Add(ttl)
		}
	}
	return nil
}

func (l *LocalRates) Release(_ context.Context, scope, lease string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.m[scope]; ok {
		delete(w.leases, lease)
	}
	return nil
}

// RateLimits applies the key's and the workspace's limits.
type RateLimits struct {
	local  *LocalRates
	shared RateCounter // nil: per process
	now    func() time.Time
	lease  time.Duration
	// Degraded counts requests limited per process because the shared
	// counter failed; warn is called once per outage.
	Degraded atomic.Int64
	// downUntil (Unix nanoseconds): the shared counter failed; count
	// locally until then rather than wait on it for every request.
	downUntil atomic.Int64
	warn      func(error)
	// Lease ids are this instance's random prefix and a sequence number:
	// unique across instances without a random read per request.
	instance string
	seq      atomic.Uint64
	// Retrying counts releases and settlements waiting in the background
	// for the shared counter to answer again.
	Retrying atomic.Int64

	// holdings are the slots and window chunks this instance holds of
	// the shared counter, per scope (ratelease.go).
	heldMu   sync.Mutex
	holdings map[string]*heldScope
}

// retryShared is how long a failed shared counter is left alone.
const retryShared = 5 * time.Second

// NewRateLimits counts in shared when it is not nil, else per process. A
// max_parallel slot is leased for lease (0: DefaultSlotLease).
func NewRateLimits(shared RateCounter, lease time.Duration, now func() time.Time, warn func(error)) *RateLimits {
	if now == nil {
		now = time.Now
	}
	if lease <= 0 {
		lease = DefaultSlotLease
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &RateLimits{local: newLocalRates(now), shared: shared, now: now, lease: lease, warn: warn,
		instance: hex.EncodeToString(b[:]), holdings: map[string]*heldScope{}}
}

// counter is the shared counter, or the local one while it is failing.
func (rl *RateLimits) counter() RateCounter {
	if rl.shared == nil {
		return rl.local
	}
	if rl.now().UnixNano() < rl.downUntil.Load() {
		rl.Degraded.Add(1)
		return rl.local
	}
	return rl.shared
}

// failed notes a shared counter failure: requests count per process for
// a few seconds, then the shared counter is tried again.
func (rl *RateLimits) failed(err error) {
	rl.Degraded.Add(1)
	if rl.downUntil.Swap(rl.now().Add(retryShared).UnixNano()) == 0 && rl.warn != nil {
		rl.warn(err)
	}
}

// rateScope is one set of limits with the scope they count in.
type rateScope struct {
	name            string // "key:<id>" or "ws:<id>"
	rpm, tpm, par   int64
	reqs, tokens    int64       // counts after Take, for headers
	slots, counts   RateCounter // where the slot and the window were counted
	held, took      bool        // a slot was leased; the window counted the request
	reserved        int64       // tokens reserved in the window
	window, resetAt int64
	// pool holds the scope's slots and window chunk in the shared
	// counter; slot is the held slot the request uses, and chunked says
	// its window was counted in the chunk.
	pool    *heldScope
	slot    string
	chunked bool
}

// RateHold is what an admitted request gives back when it ends.
type RateHold struct {
	rl     *RateLimits
	seq    uint64
	lease  string // the request's lease and settlement id: id() makes it
	scopes []rateScope
	// scopeBuf holds scopes when there is one (a key's, usually): a
	// workspace's too grows them out of it.
	scopeBuf [1]rateScope

	mu    sync.Mutex
	renew *time.Timer // nil: no slot held
	done  bool
}

// id is the hold's lease and settlement id, made when first needed: a
// request served from the instance's held slots and window chunk never
// names itself to the shared counter.
func (h *RateHold) id() string {
	if h.lease == "" {
		h.lease = h.rl.instance + "-" + strconv.FormatUint(h.seq, 36)
	}
	return h.lease
}

// label names the scope in a refusal.
func (s *rateScope) label() string {
	if id, ok := strings.CutPrefix(s.name, "key:"); ok {
		return "api key " + id
	}
	return "workspace " + strings.TrimPrefix(s.name, "ws:")
}

// Admit takes the request against the key's and the workspace's limits,
// reserving reserve tokens (its bounded estimate) in each tpm window. It
// renders nothing: the decision is what the caller's rate-limit headers
// show (the refusing scope's windows on a refusal, else the key's, or the
// workspace's when the key has no limits), which the door writes in the
// client format's own header names.
func (rl *RateLimits) Admit(ctx context.Context, id *Identity, ws ledger.Limits, reserve int64) (*RateHold, RateDecision, *apierror.Error) {
	return rl.AdmitWithDefault(ctx, id, ws, reserve, 0)
}

// AdmitWithDefault is Admit where keyParallel is the max_parallel of a
// key that sets none of its own (a gateway's max_concurrent_per_key,
// folded into max_parallel); 0: none.
func (rl *RateLimits) AdmitWithDefault(ctx context.Context, id *Identity, ws ledger.Limits, reserve, keyParallel int64) (*RateHold, RateDecision, *apierror.Error) {
	if rl == nil || id == nil {
		return nil, RateDecision{}, nil
	}
	l := id.Limits
	par := l.MaxParallel
	if par == 0 {
		par = keyParallel
	}
	keyScope := l.RPM > 0 || l.TPM > 0 || par > 0
	wsScope := id.Workspace != "" && (ws.RPM > 0 || ws.TPM > 0 || ws.MaxParallel > 0)
	if !keyScope && !wsScope {
		return nil, RateDecision{}, nil
	}
	reserve = max(0, reserve)
	now := rl.now()
	window := now.Unix() / 60 * 60
	hold := &RateHold{rl: rl, seq: rl.seq.Add(1)}
	// The scopes live in the hold: one allocation for both.
	scopes := hold.scopeBuf[:0]
	if keyScope {
		scopes = append(scopes, rateScope{name: "key:" + id.KeyID, rpm: l.RPM, tpm: l.TPM, par: par})
	}
	if wsScope {
		scopes = append(scopes, rateScope{name: "ws:" + id.Workspace, rpm: ws.RPM, tpm: ws.TPM, par: ws.MaxParallel})
	}
	hold.scopes = scopes
	sharedOK := false
	for i := range scopes {
		s := &scopes[i]
		s.window, s.resetAt = window, window+60
		c := rl.counter()
		if c == rl.shared {
			s.pool = rl.heldScope(s.name)
		}
		if s.par > 0 {
			var ok bool
			var err error
			if s.pool != nil {
				s.slot, ok, err = s.pool.takeSlot(ctx, c, hold, s.par)
			} else {
				ok, err = c.Acquire(ctx, s.name, hold.id(), s.par, rl.lease)
			}
			if err != nil {
				s.pool, s.slot = nil, ""
				rl.failed(err)
				// The script may have run before the answer was lost:
				// give the lease back once the counter answers again.
				rl.retryLater([]rateOp{{c: c, scope: s.name, lease: hold.id(), until: time.Now().Add(rl.lease)}})
				c = rl.local
				ok, _ = c.Acquire(ctx, s.name, hold.id(), s.par, rl.lease)
			}
			if !ok {
				hold.Release(0)
				return nil, RateDecision{}, rateRefusal(s, "requests in progress", s.par, 1)
			}
			s.slots, s.held = c, true
			sharedOK = sharedOK || c == rl.shared
		}
		if s.rpm == 0 && s.tpm == 0 {
			continue
		}
		var r int64
		if s.tpm > 0 {
			// An estimate past the whole tpm (every body byte counts as a
			// token, about four times a real count: a coding agent's large
			// context can do it) takes a window to itself rather than
			// being refused for ever: it is admitted into a minute no
			// other request has used, and settles to its real count.
			r = min(reserve, s.tpm)
		}
		var reqs, tokens int64
		var ok bool
		var err error
		if cc, chunks := c.(ChunkCounter); chunks && s.pool != nil {
			reqs, tokens, ok, err = s.pool.takeWindow(ctx, cc, window, s.rpm, s.tpm, r)
			s.chunked = err == nil
		} else {
			reqs, tokens, ok, err = c.Take(ctx, s.name, window, s.rpm, s.tpm, r)
		}
		if err != nil {
			rl.failed(err)
			c = rl.local
			reqs, tokens, ok, _ = c.Take(ctx, s.name, window, s.rpm, s.tpm, r)
		}
		s.reqs, s.tokens = reqs, tokens
		sharedOK = sharedOK || (err == nil && c == rl.shared)
		if !ok {
			hold.Release(0)
			what, limit := "requests per minute", s.rpm
			if s.rpm == 0 || reqs < s.rpm {
				what, limit = "tokens per minute", s.tpm
			}
			return nil, s.decision(now), rateRefusal(s, what, limit, max(1, s.resetAt-now.Unix()))
		}
		s.counts, s.took, s.reserved = c, true, r
	}
	if sharedOK && rl.downUntil.Load() != 0 {
		// The shared counter answers again: the next outage warns anew.
		rl.downUntil.Store(0)
	}
	for i := range scopes {
		if scopes[i].held && scopes[i].slot == "" {
			// A request that outlives half a lease renews it, so the
			// expiry only ever takes the slot of a request that is gone.
			hold.mu.Lock()
			hold.renew = time.AfterFunc(rl.lease/2, hold.renewLeases)
			hold.mu.Unlock()
			break
		}
	}
	return hold, scopes[0].decision(now), nil
}

// renewLeases extends the request's slots by a lease, then again every
// half lease until Release. A renewal the counter misses is tried at the
// next one; the lease has half its length to spare.
func (h *RateHold) renewLeases() {
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return
	}
	scopes := h.scopes
	h.mu.Unlock()
	for _, s := range scopes {
		if !s.held || s.slot != "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := s.slots.Renew(ctx, s.name, h.id(), h.rl.lease); err != nil {
			h.rl.failed(err)
		}
		cancel()
	}
	h.mu.Lock()
	if !h.done {
		h.renew.Reset(h.rl.lease / 2)
	}
	h.mu.Unlock()
}

// rateOp is a release or a settlement owed to a counter.
type rateOp struct {
	c             RateCounter
	scope, lease  string
	settle        bool
	window, delta int64
	until         time.Time // past this the debt has expired with its lease or window
}

func (o rateOp) run(ctx context.Context) error {
	if o.settle {
		return o.c.AddTokens(ctx, o.scope, o.window, o.delta, o.lease)
	}
	return o.c.Release(ctx, o.scope, o.lease)
}

// Release gives back the request's slots and settles each tpm window to
// the request's real token count. What the counter does not take now (a
// stalled Redis) is retried in the background until it would have
// expired anyway.
func (h *RateHold) Release(tokens int64) {
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return
	}
	h.done = true
	if h.renew != nil {
		h.renew.Stop()
	}
	scopes := h.scopes
	h.mu.Unlock()
	var buf [4]rateOp // two scopes, a release and a settlement each
	ops, shared := buf[:0], false
	for _, s := range scopes {
		switch {
		case s.held && s.slot != "":
			for _, lease := range s.pool.putSlot(s.slot) {
				ops = append(ops, rateOp{c: s.slots, scope: s.name, lease: lease, until: time.Now().Add(h.rl.lease)})
				shared = true
			}
		case s.held:
			ops = append(ops, rateOp{c: s.slots, scope: s.name, lease: h.id(), until: time.Now().Add(h.rl.lease)})
			shared = shared || s.slots != RateCounter(h.rl.local)
		}
		if s.took && s.tpm > 0 && tokens != s.reserved {
			delta := max(0, tokens) - s.reserved
			if s.chunked {
				if delta = s.pool.settle(s.window, delta); delta == 0 {
					continue
				}
			}
			// A window key lives two minutes past its last request.
			ops = append(ops, rateOp{c: s.counts, scope: s.name, lease: h.id(), settle: true,
				window: s.window, delta: delta, until: time.Now().Add(3 * time.Minute)})
			shared = shared || s.counts != RateCounter(h.rl.local)
		}
	}
	if len(ops) == 0 {
		return
	}
	if shared {
		h.rl.runOps(ops)
		return
	}
	h.rl.runOpsWith(context.Background(), ops)
}

// runOps runs ops against the shared counter, each bounded as a release
// is; what it does not take is retried in the background.
func (rl *RateLimits) runOps(ops []rateOp) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rl.runOpsWith(ctx, ops)
}

func (rl *RateLimits) runOpsWith(ctx context.Context, ops []rateOp) {
	for i := 0; i < len(ops); i++ {
		op := ops[i]
		var err error
		if rs, ok := op.c.(releaseSettler); ok && !op.settle && i+1 < len(ops) && ops[i+1].settle && ops[i+1].c == op.c && ops[i+1].scope == op.scope {
			// One round trip for the scope's slot and its tokens.
			err = rs.ReleaseAndSettle(ctx, op.scope, op.lease, ops[i+1].window, ops[i+1].delta)
			if err == nil {
				i++
			}
		} else {
			err = op.run(ctx)
		}
		if err != nil {
			// The counter is stalled: the rest would wait on it too.
			rl.failed(err)
			rl.retryLater(append([]rateOp(nil), ops[i:]...))
			return
		}
	}
}

// releaseSettler is a counter that releases a request's slot and settles
// its tokens in one step (ratecount.Redis: one round trip instead of
// two). Both halves are idempotent, as Release and AddTokens are.
type releaseSettler interface {
	ReleaseAndSettle(ctx context.Context, scope, lease string, window, n int64) error
}

// retryLater runs ops in the background, backing off from a quarter
// second to five, dropping each once it has expired. Releases are
// idempotent and settlements carry their id, so an op whose first answer
// was lost but which did run counts once.
func (rl *RateLimits) retryLater(ops []rateOp) {
	rl.Retrying.Add(int64(len(ops)))
	go func() {
		wait := 250 * time.Millisecond
		for len(ops) > 0 {
			time.Sleep(wait)
			wait = min(2*wait, 5*time.Second)
			left := ops[:0]
			for _, op := range ops {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				err := op.run(ctx)
				cancel()
				if err != nil && time.Now().Before(op.until) {
					left = append(left, op)
					continue
				}
				rl.Retrying.Add(-1)
			}
			ops = left
		}
	}()
}

// decision is what the caller is told of the scope's rpm and tpm windows
// as of now.
func (s *rateScope) decision(now time.Time) RateDecision {
	return RateDecision{
		Requests: RateWindow{Limit: s.rpm, Remaining: max(0, s.rpm-s.reqs)},
		Tokens:   RateWindow{Limit: s.tpm, Remaining: max(0, s.tpm-s.tokens)},
		ResetAt:  s.resetAt,
		ResetIn:  max(0, s.resetAt-now.Unix()),
	}
}

// rateRefusal is a 429 a client may retry after the window (≤ 60 s).
func rateRefusal(s *rateScope, what string, limit, waitSeconds int64) *apierror.Error {
	typ := "requests"
	if what == "tokens per minute" {
		typ = "tokens"
	}
	return &apierror.Error{Status: http.StatusTooManyRequests, Type: typ, Code: "rate_limit_exceeded",
		RetryAfter: strconv.FormatInt(min(max(waitSeconds, 1), 60), 10),
		Message:    fmt.Sprintf("rate limit for %s: %d %s; retry in %d s", s.label(), limit, what, min(max(waitSeconds, 1), 60))}
}
