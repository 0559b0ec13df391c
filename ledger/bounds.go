package ledger

import (
	"math"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// Bounds on one record. Upstreams report usage and clients send headers
// the gateway does not control: a negative or absurd count, or a string
// PostgreSQL cannot store, must never reach a batch (one bad row fails the
// whole INSERT) or a report sum (an overflow fails every report over its
// range). Real traffic sits orders of magnitude inside each bound.
const (
	// MaxTokens bounds one token type of one request; no model's context
	// comes within a thousandth of it.
	MaxTokens = 1 << 31
	// MaxPrice bounds a per-token price in picodollars ($1,073.74 per
	// million tokens).
	MaxPrice = 1 << 30
	// MaxCost bounds one request's cost in picodollars ($1,125.90, some
	// 40 times the dearest real request), so 8,192 requests at the bound
	// still sum inside an int64.
	MaxCost = 1 << 50
	// maxTextBytes bounds every text column.
	maxTextBytes = 256
)

// clampInt returns n limited to [0, max].
func clampInt(n, max int64) int64 {
	if n < 0 {
		return 0
	}
	if n > max {
		return max
	}
	return n
}

// ClampTokens limits an upstream's token count to [0, MaxTokens].
func ClampTokens(n int64) int64 { return clampInt(n, MaxTokens) }

// costOf is tokens × price, both clamped, saturating at MaxCost.
func costOf(tokens, price int64) int64 {
	tokens, price = ClampTokens(tokens), clampInt(price, MaxPrice)
	if tokens == 0 || price == 0 {
		return 0
	}
	// Both factors are below 2^31, so the product fits in an int64.
	return min(tokens*price, MaxCost)
}

// cleanText makes s storable in every database: valid UTF-8, no NUL
// (PostgreSQL's text type refuses it), at most max bytes, cut on a rune
// boundary. Clean values, the usual case, are returned without a copy.
func cleanText(s string, max int) string {
	if len(s) <= max && StorableText(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// sanitize brings every field of r inside the bounds above. The writer
// calls it on every record it accepts, so no producer can forget.
func (r *Record) sanitize() {
	for _, s := range [...]*string{&r.RequestID, &r.KeyID, &r.Workspace, &r.Alias, &r.UpstreamModel,
		&r.Provider, &r.ServiceTier, &r.SessionID, &r.ContextWindow, &r.Agent} {
		*s = cleanText(*s, maxTextBytes)
	}
	r.Endpoint = Endpoint(cleanText(string(r.Endpoint), maxTextBytes))
	r.Outcome = Outcome(cleanText(string(r.Outcome), maxTextBytes))
	for _, n := range [...]*int64{&r.InputTokens, &r.CacheCreation5m, &r.CacheCreation1h, &r.CacheReadTokens, &r.OutputTokens} {
		*n = ClampTokens(*n)
	}
	for _, p := range [...]*int64{&r.Prices.Input, &r.Prices.Output, &r.Prices.CacheRead, &r.Prices.CacheWrite5m, &r.Prices.CacheWrite1h} {
		*p = clampInt(*p, MaxPrice)
	}
	r.CostPicoUSD = clampInt(r.CostPicoUSD, MaxCost)
	// PostgreSQL's status column is an integer: a status past it would
	// fail in the driver, not as a row the writer sets aside.
	r.Status = int(min(max(int64(r.Status), math.MinInt32), math.MaxInt32))
	if r.Latency < 0 {
		r.Latency = 0
	}
	if r.TTFT < 0 {
		r.TTFT = 0
	}
}

// ServiceTierOf is the tier to record for what an upstream reported:
// OpenAI's "default" is the standard tier; anything that is not a short
// lower-case word is not a tier and records as standard, so an upstream
// cannot fill the reports' service_tier dimension with arbitrary text.
func ServiceTierOf(reported string) string {
	if reported == "" || reported == "default" || len(reported) > 32 {
		return "standard"
	}
	for i := 0; i < len(reported); i++ {
		if c := reported[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "standard"
		}
	}
	return reported
}

// splitSum is a sum of int64s that the database returns as two sums, one
// of the values' high bits and one of their low splitShift bits: neither
// overflows before 2^31 records, where one SUM of bounded costs overflows
// after 2^13 of them at MaxCost.
type splitSum struct{ hi, lo int64 }

// splitShift is where splitSum divides a value.
const splitShift = 31

// value is the exact sum hi·2^31 + lo, saturated to int64.
func (s splitSum) value() int64 {
	hi, lo := s.hi>>(64-splitShift), uint64(s.hi)<<splitShift // hi·2^31 as 128 bits
	sum, carry := bits.Add64(lo, uint64(s.lo), 0)
	hi += int64(carry)
	if s.lo < 0 {
		hi-- // lo's sign extension
	}
	switch {
	case hi > 0 || (hi == 0 && sum > math.MaxInt64):
		return math.MaxInt64
	case hi < -1 || (hi == -1 && sum <= math.MaxInt64):
		return math.MinInt64
	}
	return int64(sum)
}

// StorableText reports whether s can be stored in a text column of every
// database: valid UTF-8 without NUL (PostgreSQL's text type refuses it).
func StorableText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}
