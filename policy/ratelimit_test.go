package policy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/internal/testclock"
	"github.com/modelgate/modelgate/ledger"
)

// newFakeClock is a clock early in a minute, so a test's requests share
// one window.
func newFakeClock() *testclock.Clock {
	return testclock.New(time.Date(2030, 1, 2, 3, 4, 1, 0, time.UTC))
}

func admit(rl *RateLimits, id *Identity, reserve int64) (*RateHold, RateDecision, *apierror.Error) {
	return rl.Admit(context.Background(), id, ledger.Limits{}, reserve)
}

// TestTPMReservesEachRequestsEstimate: concurrent requests each reserve
// their bound, so 30 requests that may use 5000 tokens each pass a tpm of
// 10000 two at a time, not all at once as when only finished requests
// counted.
func TestTPMReservesEachRequestsEstimate(t *testing.T) {
	rl := NewRateLimits(nil, 0, newFakeClock().Now, nil)
	id := &Identity{KeyID: "k", Limits: ledger.Limits{TPM: 10000}}
	var admitted atomic.Int64
	var holds sync.Map
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hold, _, refusal := admit(rl, id, 5000)
			if refusal == nil {
				admitted.Add(1)
				holds.Store(hold, true)
			} else if refusal.Status != 429 || !strings.Contains(refusal.Message, "10000 tokens per minute") || refusal.NoRetry {
				t.Errorf("refusal: %+v", refusal)
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 2 {
		t.Fatalf("%d of 30 requests of 5000 tokens passed a tpm of 10000", admitted.Load())
	}
	// Each settles to its real use: 100 tokens each leaves 9800.
	holds.Range(func(k, _ any) bool { k.(*RateHold).Release(100); return true })
	hold, d, refusal := admit(rl, id, 5000)
	if refusal != nil || d.Tokens.Remaining != 4800 {
		t.Fatalf("after settling: %v remaining %d", refusal, d.Tokens.Remaining)
	}
	if _, _, refusal := admit(rl, id, 4801); refusal == nil {
		t.Error("a reservation past the tpm admitted")
	}
	hold.Release(0)
	if _, d, refusal := admit(rl, id, 9800); refusal != nil || d.Tokens.Remaining != 0 {
		t.Errorf("a request that used nothing settles to nothing: %v %d", refusal, d.Tokens.Remaining)
	}
}

// TestTPMAdmitsARequestLargerThanTheLimitAlone: an estimate past the
// whole tpm (a bound: every body byte counts as a token) is not refused
// for ever, which SDKs would never retry; it takes a window no other
// request used, and the window is full until it resets (a retryable 429
// naming the limit).
func TestTPMAdmitsARequestLargerThanTheLimitAlone(t *testing.T) {
	clock := newFakeClock()
	rl := NewRateLimits(nil, 0, clock.Now, nil)
	id := &Identity{KeyID: "k", Limits: ledger.Limits{TPM: 10000}}
	big, _, refusal := admit(rl, id, 40000)
	if refusal != nil {
		t.Fatalf("a request estimated past the tpm, alone in its window: %v", refusal.Message)
	}
	_, _, refusal = admit(rl, id, 1)
	if refusal == nil || refusal.Status != 429 || refusal.NoRetry || refusal.RetryAfter == "" ||
		!strings.Contains(refusal.Message, "api key k") || !strings.Contains(refusal.Message, "10000 tokens per minute") {
		t.Fatalf("the window the large request took: %+v", refusal)
	}
	big.Release(3000)
	if _, _, refusal := admit(rl, id, 7000); refusal != nil {
		t.Errorf("after the large request settled to 3000 tokens, 7000 more: %v", refusal)
	}
	clock.Advance(time.Minute)
	if _, _, refusal := admit(rl, id, 10000); refusal != nil {
		t.Errorf("a request of exactly the tpm in a new window: %v", refusal)
	}
	if _, _, refusal := admit(rl, id, 20000); refusal == nil {
		t.Error("a second large request admitted into a window already used")
	}
}

// TestTPMSettlesInTheWindowItReservedIn: a request admitted in one minute
// and finished in the next settles in its own window and leaves the new
// one's counts alone (the per-process counter used to reset them).
func TestTPMSettlesInTheWindowItReservedIn(t *testing.T) {
	clock := newFakeClock()
	rl := NewRateLimits(nil, 0, clock.Now, nil)
	id := &Identity{KeyID: "k", Limits: ledger.Limits{RPM: 3, TPM: 10000}}
	old, _, _ := admit(rl, id, 5000)
	clock.Advance(time.Minute)
	if _, _, refusal := admit(rl, id, 4000); refusal != nil {
		t.Fatal(refusal)
	}
	old.Release(9000)
	_, d, refusal := admit(rl, id, 1000)
	if refusal != nil || d.Tokens.Remaining != 5000 || d.Requests.Remaining != 1 {
		t.Errorf("the new window after the old one settled: %v tokens %d requests %d", refusal,
			d.Tokens.Remaining, d.Requests.Remaining)
	}
}

// TestSlotLeaseExpiresWhileTheKeyStaysBusy: slots whose release never
// comes (an instance that died) come back within a lease even though
// other requests keep using the key.
func TestSlotLeaseExpiresWhileTheKeyStaysBusy(t *testing.T) {
	clock := newFakeClock()
	rl := NewRateLimits(nil, time.Minute, clock.Now, nil)
	id := &Identity{KeyID: "k", Limits: ledger.Limits{MaxParallel: 3}}
	for i := 0; i < 2; i++ {
		if _, _, refusal := admit(rl, id, 0); refusal != nil { // never released
			t.Fatal(refusal)
		}
	}
	for i := 0; i < 5; i++ {
		clock.Advance(10 * time.Second)
		hold, _, refusal := admit(rl, id, 0)
		if refusal != nil {
			t.Fatal(refusal)
		}
		if _, _, refusal := admit(rl, id, 0); refusal == nil {
			t.Fatalf("round %d: a fourth slot of three", i)
		}
		hold.Release(0)
	}
	clock.Advance(11 * time.Second)
	for i := 0; i < 3; i++ {
		if _, _, refusal := admit(rl, id, 0); refusal != nil {
			t.Fatalf("slot %d after the lost leases expired: %v", i, refusal)
		}
	}
}

// TestSlotLeaseRenewedWhileTheRequestRuns: a request longer than the
// lease keeps its slot.
func TestSlotLeaseRenewedWhileTheRequestRuns(t *testing.T) {
	clock := newFakeClock()
	rl := NewRateLimits(nil, time.Minute, clock.Now, nil)
	id := &Identity{KeyID: "k", Limits: ledger.Limits{MaxParallel: 1}}
	hold, _, _ := admit(rl, id, 0)
	defer hold.Release(0)
	for i := 0; i < 4; i++ {
		clock.Advance(30 * time.Second)
		hold.renewLeases() // what its timer does every half lease
	}
	clock.Advance(50 * time.Second)
	if _, _, refusal := admit(rl, id, 0); refusal == nil {
		t.Error("a running request's slot given to another")
	}
}

// stallingCounter is a shared counter that fails while stalled; with
// applied set, a failing call still takes effect, as when Redis ran a
// script whose answer was lost.
type stallingCounter struct {
	*LocalRates
	stalled, applied atomic.Bool
	calls            atomic.Int64
}

var errStalled = errors.New("i/o timeout")

func (s *stallingCounter) fail(do func() error) error {
	s.calls.Add(1)
	if !s.stalled.Load() {
		return do()
	}
	if s.applied.Load() {
		_ = do()
	}
	return errStalled
}

func (s *stallingCounter) Take(ctx context.Context, scope string, window, rpm, tpm, reserve int64) (r, t int64, ok bool, err error) {
	err = s.fail(func() error { r, t, ok, _ = s.LocalRates.Take(ctx, scope, window, rpm, tpm, reserve); return nil })
	return r, t, ok, err
}

func (s *stallingCounter) AddTokens(ctx context.Context, scope string, window, n int64, id string) error {
	return s.fail(func() error { return s.LocalRates.AddTokens(ctx, scope, window, n, id) })
}

func (s *stallingCounter) Acquire(ctx context.Context, scope, lease string, max int64, ttl time.Duration) (ok bool, err error) {
	err = s.fail(func() error { ok, _ = s.LocalRates.Acquire(ctx, scope, lease, max, ttl); return nil })
	return ok, err
}

func (s *stallingCounter) Release(ctx context.Context, scope, lease string) error {
	return s.fail(func() error { return s.LocalRates.Release(ctx, scope, lease) })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLostReleaseIsRetried: releases the shared counter did not take
// during a stall are retried when it answers again, long before their
// leases expire.
func TestLostReleaseIsRetried(t *testing.T) {
	shared := &stallingCounter{LocalRates: NewLocalRates()}
	warned := make(chan error, 1)
	rl := NewRateLimits(shared, time.Hour, nil, func(err error) { warned <- err })
	id := &Identity{KeyID: "k", Limits: ledger.Limits{MaxParallel: 2}}
	var holds []*RateHold
	for i := 0; i < 2; i++ {
		hold, _, refusal := admit(rl, id, 0)
		if refusal != nil {
			t.Fatal(refusal)
		}
		holds = append(holds, hold)
	}
	shared.stalled.Store(true)
	for _, h := range holds {
		h.Release(0)
	}
	if rl.Retrying.Load() != 2 {
		t.Fatalf("%d releases waiting, want 2", rl.Retrying.Load())
	}
	<-warned
	shared.stalled.Store(false)
	waitFor(t, "released", func() bool { return rl.Retrying.Load() == 0 })
	for i := 0; i < 2; i++ {
		if ok, _ := shared.LocalRates.Acquire(context.Background(), "key:k", "x"+string(rune('a'+i)), 2, time.Hour); !ok {
			t.Errorf("slot %d still held in the shared counter", i)
		}
	}
}

// TestAcquireWhoseAnswerWasLostIsGivenBack: a slot the shared counter
// took but whose answer never arrived is released once it answers again.
func TestAcquireWhoseAnswerWasLostIsGivenBack(t *testing.T) {
	shared := &stallingCounter{LocalRates: NewLocalRates()}
	rl := NewRateLimits(shared, time.Hour, nil, nil)
	id := &Identity{KeyID: "k", Limits: ledger.Limits{MaxParallel: 1}}
	shared.stalled.Store(true)
	shared.applied.Store(true)
	hold, _, refusal := admit(rl, id, 0) // counted in the process instead
	if refusal != nil {
		t.Fatal(refusal)
	}
	hold.Release(0)
	shared.stalled.Store(false)
	waitFor(t, "given back", func() bool { return rl.Retrying.Load() == 0 })
	if ok, _ := shared.LocalRates.Acquire(context.Background(), "key:k", "other", 1, time.Hour); !ok {
		t.Error("the slot whose answer was lost is still held")
	}
}

// TestStalledReleaseDoesNotWaitTwice: once the shared counter fails, the
// rest of a release goes to the background instead of waiting on it again.
func TestStalledReleaseDoesNotWaitTwice(t *testing.T) {
	shared := &stallingCounter{LocalRates: NewLocalRates()}
	rl := NewRateLimits(shared, time.Hour, nil, nil)
	id := &Identity{KeyID: "k", Workspace: "w", Limits: ledger.Limits{MaxParallel: 1, TPM: 1000}}
	hold, _, refusal := rl.Admit(context.Background(), id, ledger.Limits{MaxParallel: 1, TPM: 1000}, 500)
	if refusal != nil {
		t.Fatal(refusal)
	}
	shared.stalled.Store(true)
	before := shared.calls.Load()
	hold.Release(10)
	if n := shared.calls.Load() - before; n != 1 {
		t.Errorf("release waited on a stalled counter %d times", n)
	}
	if rl.Retrying.Load() != 4 {
		t.Errorf("%d operations retried, want 4 (two slots, two settlements)", rl.Retrying.Load())
	}
	shared.stalled.Store(false)
	waitFor(t, "settled", func() bool { return rl.Retrying.Load() == 0 })
	_, toks, _, _ := shared.LocalRates.Take(context.Background(), "ws:w", hold.scopes[1].window, 0, 0, 0)
	if toks != 10 {
		t.Errorf("workspace window holds %d tokens after settling, want 10", toks)
	}
}

// TestLocalRenewAfterReleaseHoldsNothing: as in Redis, a late renewal
// does not bring a released slot back.
func TestLocalRenewAfterReleaseHoldsNothing(t *testing.T) {
	l := NewLocalRates()
	ctx := context.Background()
	if a, _ := l.Acquire(ctx, "key:k", "only", 1, time.Minute); !a {
		t.Fatal("first slot refused")
	}
	_ = l.Release(ctx, "key:k", "only")
	_ = l.Renew(ctx, "key:k", "only", time.Minute)
	if a, _ := l.Acquire(ctx, "key:k", "next", 1, time.Minute); !a {
		t.Fatal("the one slot after a release and a late renewal is still taken")
	}
}

// TestRateDecisionOfScope: the decision shows what the scope's windows
// hold as the headers did when policy wrote them: the limits, what is
// left (never below 0), the window's end and the whole seconds to it.
func TestRateDecisionOfScope(t *testing.T) {
	now := time.Unix(1_760_000_030, 0)
	s := rateScope{rpm: 10, tpm: 1000, reqs: 12, tokens: 400, resetAt: 1_760_000_040}
	want := RateDecision{Requests: RateWindow{Limit: 10, Remaining: 0}, Tokens: RateWindow{Limit: 1000, Remaining: 600},
		ResetAt: 1_760_000_040, ResetIn: 10}
	if got := s.decision(now); got != want || !got.Shown() {
		t.Fatalf("decision %+v, want %+v", got, want)
	}
	s.resetAt = now.Unix() - 5
	if got := s.decision(now).ResetIn; got != 0 {
		t.Errorf("a window already over resets in %d s, want 0", got)
	}
	if (&rateScope{par: 3}).decision(now).Shown() {
		t.Error("a scope with only max_parallel shows rate headers")
	}
}
