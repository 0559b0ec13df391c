package handlers

import (
	"math"
	"math/rand/v2"
	"net/http"
	"net/textproto"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// rateScope is what policy's rate scope knew of a window when it wrote
// the headers itself.
type rateScope struct{ rpm, tpm, reqs, tokens, resetAt int64 }

// decide is policy's rateScope.decision (pinned there by
// TestRateDecisionOfScope) over the test's scope.
func decide(s *rateScope, now time.Time) policy.RateDecision {
	return policy.RateDecision{
		Requests: policy.RateWindow{Limit: s.rpm, Remaining: max(0, s.rpm-s.reqs)},
		Tokens:   policy.RateWindow{Limit: s.tpm, Remaining: max(0, s.tpm-s.tokens)},
		ResetAt:  s.resetAt,
		ResetIn:  max(0, s.resetAt-now.Unix()),
	}
}

// setRateHeadersBefore is setRateHeaders as it was before the one-string
// rewrite (87a729f), when policy wrote the headers.
func setRateHeadersBefore(h http.Header, s *rateScope, cf providers.Format, now time.Time) {
	if s.rpm == 0 && s.tpm == 0 {
		return
	}
	wait := strconv.FormatInt(max(0, s.resetAt-now.Unix()), 10) + "s"
	names := cf.RateLimitHeaders()
	if names.ResetAt {
		wait = time.Unix(s.resetAt, 0).UTC().Format(time.RFC3339)
	}
	if s.rpm > 0 {
		h.Set(names.RequestsLimit, strconv.FormatInt(s.rpm, 10))
		h.Set(names.RequestsRemaining, strconv.FormatInt(max(0, s.rpm-s.reqs), 10))
		h.Set(names.RequestsReset, wait)
	}
	if s.tpm > 0 {
		h.Set(names.TokensLimit, strconv.FormatInt(s.tpm, 10))
		h.Set(names.TokensRemaining, strconv.FormatInt(max(0, s.tpm-s.tokens), 10))
		h.Set(names.TokensReset, wait)
	}
}

// TestRateHeadersAsBefore: both families, edge values, a second
// call on the same map, and headers already there, give what h.Set gave
// when policy wrote them.
func TestRateHeadersAsBefore(t *testing.T) {
	for _, cf := range providers.ClientFormats() {
		names := cf.RateLimitHeaders()
		for _, n := range []string{names.RequestsLimit, names.RequestsRemaining, names.RequestsReset, names.TokensLimit, names.TokensRemaining, names.TokensReset} {
			if textproto.CanonicalMIMEHeaderKey(n) != n {
				t.Fatalf("%v: header name %q is not canonical: set directly it is a second header beside h.Set's", cf, n)
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	vals := []int64{0, 1, 59, 60, 61, math.MaxInt64, math.MinInt64, -1, 1 << 40}
	pick := func() int64 {
		if rng.IntN(3) == 0 {
			return rng.Int64N(1 << 20)
		}
		return vals[rng.IntN(len(vals))]
	}
	now := time.Unix(1_760_000_000, 0)
	for range 20000 {
		cf := providers.ClientFormats()[rng.IntN(len(providers.ClientFormats()))]
		var scopes [2]rateScope
		for i := range scopes {
			scopes[i] = rateScope{rpm: max(0, pick()), tpm: max(0, pick()), reqs: pick(), tokens: pick(),
				resetAt: now.Unix() + pick()%120}
			if rng.IntN(2) == 0 {
				scopes[i].resetAt = now.Unix() - rng.Int64N(100)
			}
		}
		got, want := http.Header{}, http.Header{}
		for _, h := range []http.Header{got, want} {
			h.Set("X-Ratelimit-Limit-Requests", "upstream")
			h.Add("Anthropic-Ratelimit-Tokens-Reset", "a")
			h.Add("Anthropic-Ratelimit-Tokens-Reset", "b")
			h.Set("Content-Type", "application/json")
		}
		for i := range scopes {
			setRateHeaders(got, cf, decide(&scopes[i], now))
			setRateHeadersBefore(want, &scopes[i], cf, now)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v %+v:\n got %v\nwant %v", cf, scopes, got, want)
		}
		// A later Add must not write into a neighbour's value.
		for k := range got {
			got.Add(k, "later")
			want.Add(k, "later")
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after Add:\n got %v\nwant %v", got, want)
		}
	}
}

// BenchmarkRateHeaders: the door's half of a rate admission that used to
// happen inside policy.Admit, which keeps its two allocations (one string,
// one slice) per request with limits.
func BenchmarkRateHeaders(b *testing.B) {
	d := policy.RateDecision{Requests: policy.RateWindow{Limit: 600, Remaining: 599},
		Tokens: policy.RateWindow{Limit: 1 << 20, Remaining: 1 << 19}, ResetAt: 1_760_000_040, ResetIn: 12}
	for _, cf := range []providers.Format{providers.FormatOpenAI, providers.FormatAnthropic} {
		b.Run(cf.String(), func(b *testing.B) {
			h := http.Header{}
			b.ReportAllocs()
			for b.Loop() {
				setRateHeaders(h, cf, d)
			}
		})
	}
}
