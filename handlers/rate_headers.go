package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// setRateHeaders writes a rate admission's decision as the rate-limit
// headers a client of cf reads. Every request with limits pays for it, so
// the values share one string and one slice (two allocations, not
// twelve); the names are canonical already, so they are set as they are.
func setRateHeaders(h http.Header, cf providers.Format, d policy.RateDecision) {
	if !d.Shown() {
		return
	}
	names := cf.RateLimitHeaders()
	var buf [160]byte
	b := buf[:0]
	var ends [5]int // limit, remaining, wait; then the tokens' limit and remaining
	if names.ResetAt {
		b = time.Unix(d.ResetAt, 0).UTC().AppendFormat(b, time.RFC3339)
	} else {
		b = append(strconv.AppendInt(b, d.ResetIn, 10), 's')
	}
	ends[0] = len(b)
	b = strconv.AppendInt(b, d.Requests.Limit, 10)
	ends[1] = len(b)
	b = strconv.AppendInt(b, d.Requests.Remaining, 10)
	ends[2] = len(b)
	b = strconv.AppendInt(b, d.Tokens.Limit, 10)
	ends[3] = len(b)
	b = strconv.AppendInt(b, d.Tokens.Remaining, 10)
	ends[4] = len(b)
	all := string(b)
	wait, rpm, rpmLeft, tpm, tpmLeft := all[:ends[0]], all[ends[0]:ends[1]], all[ends[1]:ends[2]], all[ends[2]:ends[3]], all[ends[3]:ends[4]]
	vals := make([]string, 0, 6)
	set := func(name, v string) {
		vals = append(vals, v)
		h[name] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if d.Requests.Limit > 0 {
		set(names.RequestsLimit, rpm)
		set(names.RequestsRemaining, rpmLeft)
		set(names.RequestsReset, wait)
	}
	if d.Tokens.Limit > 0 {
		set(names.TokensLimit, tpm)
		set(names.TokensRemaining, tpmLeft)
		set(names.TokensReset, wait)
	}
}
