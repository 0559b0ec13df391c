package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// Rate limits per key and per workspace: requests and tokens per minute
// (windows aligned to the minute) and requests in progress. Counted in a
// shared RateCounter (Redis, when `limits redis` is set) so every
// instance sees one count, else in this process; a shared counter that
// fails leaves the process's own counts in force until it answers again.

// RateCounter counts one-minute windows and requests in progress per
// scope. Implementations are safe for concurrent use.
type RateCounter interface {
	// Take adds one request to scope's window starting at window (Unix
	// seconds) unless it already holds rpm requests or tpm tokens (0: no
	// limit), and returns the window's counts.
	Take(ctx context.Context, scope string, window, rpm, tpm int64) (reqs, tokens int64, ok bool, err error)
	// AddTokens counts a finished request's tokens in its window.
	AddTokens(ctx context.Context, scope string, window, n int64) error
	// Acquire takes one of scope's max slots for a request in progress.
	Acquire(ctx context.Context, scope string, max int64) (ok bool, err error)
	Release(ctx context.Context, scope string) error
}

// LocalRates is the per-process RateCounter.
type LocalRates struct {
	mu sync.Mutex
	m  map[string]*rateWindow
}

type rateWindow struct {
	start, reqs, tokens, inflight int64
}

// NewLocalRates returns an empty per-process counter.
func NewLocalRates() *LocalRates { return &LocalRates{m: map[string]*rateWindow{}} }

func (l *LocalRates) get(scope string, window int64) *rateWindow {
	w, ok := l.m[scope]
	if !ok {
		if len(l.m) > 100000 {
			// Drop idle scopes so a churn of keys cannot grow the map.
			for k, v := range l.m {
				if v.inflight == 0 && v.start < window {
					delete(l.m, k)
				}
			}
		}
		w = &rateWindow{start: window}
		l.m[scope] = w
	}
	if w.start != window {
		w.start, w.reqs, w.tokens = window, 0, 0
	}
	return w
}

func (l *LocalRates) Take(_ context.Context, scope string, window, rpm, tpm int64) (int64, int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.get(scope, window)
	if (rpm > 0 && w.reqs >= rpm) || (tpm > 0 && w.tokens >= tpm) {
		return w.reqs, w.tokens, false, nil
	}
	w.reqs++
	return w.reqs, w.tokens, true, nil
}

func (l *LocalRates) AddTokens(_ context.Context, scope string, window, n int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.get(scope, window); n > 0 {
		w.tokens += n
	}
	return nil
}

func (l *LocalRates) Acquire(_ context.Context, scope string, max int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.m[scope]
	if !ok {
		w = &rateWindow{}
		l.m[scope] = w
	}
	if w.inflight >= max {
		return false, nil
	}
	w.inflight++
	return true, nil
}

func (l *LocalRates) Release(_ context.Context, scope string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.m[scope]; ok && w.inflight > 0 {
		w.inflight--
	}
	return nil
}

// RateLimits applies the key's and the workspace's limits.
type RateLimits struct {
	local  *LocalRates
	shared RateCounter // nil: per process
	now    func() time.Time
	// Degraded counts requests limited per process because the shared
	// counter failed; warn is called once per outage.
	Degraded atomic.Int64
	// downUntil (Unix nanoseconds): the shared counter failed; count
	// locally until then rather than wait on it for every request.
	downUntil atomic.Int64
	warn      func(error)
}

// retryShared is how long a failed shared counter is left alone.
const retryShared = 5 * time.Second

// NewRateLimits counts in shared when it is not nil, else per process.
func NewRateLimits(shared RateCounter, now func() time.Time, warn func(error)) *RateLimits {
	if now == nil {
		now = time.Now
	}
	return &RateLimits{local: NewLocalRates(), shared: shared, now: now, warn: warn}
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
	name, label     string
	rpm, tpm, par   int64
	reqs, tokens    int64 // counts after Take, for headers
	held            bool  // a parallel slot was taken
	counterUsed     RateCounter
	window, resetAt int64
}

// RateHold is what an admitted request gives back when it ends.
type RateHold struct {
	rl     *RateLimits
	scopes []rateScope
}

// Admit takes the request against the key's and the workspace's limits,
// setting the caller's rate-limit headers on h; a refusal is an *APIError.
func (rl *RateLimits) Admit(ctx context.Context, id *Identity, ws ledger.Limits, cf providers.Format, h http.Header) (*RateHold, *providers.APIError) {
	if rl == nil || id == nil {
		return nil, nil
	}
	var scopes []rateScope
	if l := id.Limits; l.RPM > 0 || l.TPM > 0 || l.MaxParallel > 0 {
		scopes = append(scopes, rateScope{name: "key:" + id.KeyID, label: "api key " + id.KeyID, rpm: l.RPM, tpm: l.TPM, par: l.MaxParallel})
	}
	if id.Workspace != "" && (ws.RPM > 0 || ws.TPM > 0 || ws.MaxParallel > 0) {
		scopes = append(scopes, rateScope{name: "ws:" + id.Workspace, label: "workspace " + id.Workspace, rpm: ws.RPM, tpm: ws.TPM, par: ws.MaxParallel})
	}
	if len(scopes) == 0 {
		return nil, nil
	}
	now := rl.now()
	window := now.Unix() / 60 * 60
	hold := &RateHold{rl: rl}
	sharedOK := false
	for i := range scopes {
		s := &scopes[i]
		s.window, s.resetAt = window, window+60
		c := rl.counter()
		if s.par > 0 {
			ok, err := c.Acquire(ctx, s.name, s.par)
			if err != nil {
				rl.failed(err)
				c = rl.local
				ok, _ = c.Acquire(ctx, s.name, s.par)
			}
			if !ok {
				hold.Release(0)
				return nil, rateRefusal(s, "requests in progress", s.par, 1, cf)
			}
			s.held = true
		}
		s.counterUsed = c
		hold.scopes = append(hold.scopes, *s)
		if s.rpm == 0 && s.tpm == 0 {
			continue
		}
		reqs, tokens, ok, err := c.Take(ctx, s.name, window, s.rpm, s.tpm)
		if err != nil {
			rl.failed(err)
			c = rl.local
			hold.scopes[len(hold.scopes)-1].counterUsed = c
			reqs, tokens, ok, _ = c.Take(ctx, s.name, window, s.rpm, s.tpm)
		}
		s.reqs, s.tokens = reqs, tokens
		hold.scopes[len(hold.scopes)-1].reqs, hold.scopes[len(hold.scopes)-1].tokens = reqs, tokens
		sharedOK = sharedOK || (err == nil && c == rl.shared)
		if !ok {
			hold.Release(0)
			what, limit := "requests per minute", s.rpm
			if s.rpm == 0 || reqs < s.rpm {
				what, limit = "tokens per minute", s.tpm
			}
			setRateHeaders(h, s, cf, now)
			return nil, rateRefusal(s, what, limit, max(1, s.resetAt-now.Unix()), cf)
		}
	}
	if sharedOK && rl.downUntil.Load() != 0 {
		// The shared counter answers again: the next outage warns anew.
		rl.downUntil.Store(0)
	}
	setRateHeaders(h, &scopes[0], cf, now)
	return hold, nil
}

// Release gives back the request's parallel slots and counts its tokens.
func (h *RateHold) Release(tokens int64) {
	if h == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range h.scopes {
		if s.held {
			if err := s.counterUsed.Release(ctx, s.name); err != nil {
				h.rl.failed(err)
			}
		}
		if tokens > 0 && s.tpm > 0 {
			if err := s.counterUsed.AddTokens(ctx, s.name, s.window, tokens); err != nil {
				h.rl.failed(err)
			}
		}
	}
	h.scopes = nil
}

// setRateHeaders writes the caller's family of rate-limit headers for the
// most specific scope.
func setRateHeaders(h http.Header, s *rateScope, cf providers.Format, now time.Time) {
	if s.rpm == 0 && s.tpm == 0 {
		return
	}
	reset := time.Unix(s.resetAt, 0).UTC()
	wait := strconv.FormatInt(max(0, s.resetAt-now.Unix()), 10) + "s"
	if cf == providers.FormatAnthropic {
		if s.rpm > 0 {
			h.Set("Anthropic-Ratelimit-Requests-Limit", strconv.FormatInt(s.rpm, 10))
			h.Set("Anthropic-Ratelimit-Requests-Remaining", strconv.FormatInt(max(0, s.rpm-s.reqs), 10))
			h.Set("Anthropic-Ratelimit-Requests-Reset", reset.Format(time.RFC3339))
		}
		if s.tpm > 0 {
			h.Set("Anthropic-Ratelimit-Tokens-Limit", strconv.FormatInt(s.tpm, 10))
			h.Set("Anthropic-Ratelimit-Tokens-Remaining", strconv.FormatInt(max(0, s.tpm-s.tokens), 10))
			h.Set("Anthropic-Ratelimit-Tokens-Reset", reset.Format(time.RFC3339))
		}
		return
	}
	if s.rpm > 0 {
		h.Set("X-Ratelimit-Limit-Requests", strconv.FormatInt(s.rpm, 10))
		h.Set("X-Ratelimit-Remaining-Requests", strconv.FormatInt(max(0, s.rpm-s.reqs), 10))
		h.Set("X-Ratelimit-Reset-Requests", wait)
	}
	if s.tpm > 0 {
		h.Set("X-Ratelimit-Limit-Tokens", strconv.FormatInt(s.tpm, 10))
		h.Set("X-Ratelimit-Remaining-Tokens", strconv.FormatInt(max(0, s.tpm-s.tokens), 10))
		h.Set("X-Ratelimit-Reset-Tokens", wait)
	}
}

// rateRefusal is a 429 a client may retry after the window (≤ 60 s).
func rateRefusal(s *rateScope, what string, limit, waitSeconds int64, cf providers.Format) *providers.APIError {
	typ := "requests"
	if what == "tokens per minute" {
		typ = "tokens"
	}
	return &providers.APIError{Status: http.StatusTooManyRequests, Type: typ, Code: "rate_limit_exceeded",
		RetryAfter: strconv.FormatInt(min(max(waitSeconds, 1), 60), 10),
		Message:    fmt.Sprintf("rate limit for %s: %d %s; retry in %d s", s.label, limit, what, min(max(waitSeconds, 1), 60))}
}
