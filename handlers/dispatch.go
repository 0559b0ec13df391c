package handlers

// Dispatch: which deployment gets the request, retries, fallbacks,
// cooldowns, and how one upstream attempt ends.

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelgate/modelgate/providers"
)

// result is how one upstream attempt ended.
type result struct {
	committed bool // the client has seen headers or bytes: no retry possible
	recorded  bool // the record is already in the database (durability sync)
	retryable bool // another deployment may succeed
	skipped   admitResult
	wait      time.Duration
	err       *providers.APIError // what to tell the client if nothing else works
	class     string              // short failure class for the attempt log
}

// gapWatch cancels an upstream request when no stream event arrived for
// longer than d.
type gapWatch struct {
	d       time.Duration
	t       *time.Timer
	expired atomic.Bool
}

func newGapWatch(d time.Duration, cancel context.CancelFunc) *gapWatch {
	g := &gapWatch{d: d}
	g.t = time.AfterFunc(d, func() { g.expired.Store(true); cancel() })
	return g
}

// reset restarts the wait after an event. A nil watch does nothing.
func (g *gapWatch) reset() {
	if g != nil {
		g.t.Reset(g.d)
	}
}

func (g *gapWatch) stop() {
	if g != nil {
		g.t.Stop()
	}
}

// fired reports whether the gap expired and cancelled the request.
func (g *gapWatch) fired() bool { return g != nil && g.expired.Load() }

// dispatch tries the alias's deployments, then its fallbacks, until one
// answers or none is left.
//
// It reports whether the record is already written (durability sync).
func (g *Gateway) dispatch(x *exchange) (recorded bool) {
	w, r, cf, alias, rec := x.w, x.r, x.cf, x.alias, x.rec
	chain := g.chains[alias]
	id := IdentityFrom(r.Context())
	var last *providers.APIError
	var minWait time.Duration
	cooling, limited := 0, 0
	tried := 0
	for ci, rt := range chain {
		if ci > 0 && !id.Allows(rt.alias) {
			// A fallback is another alias: a key limited to some aliases
			// must not reach the others through it.
			continue
		}
		ordered := orderCandidates(rt.backends, g.models.Router.RoutingStrategy,
			func(b *backend) float64 { return b.dep.Weight },
			func(b *backend) *DeploymentState { return b.state })
		attempts := rt.attempts
		for i := 0; i < attempts; i++ {
			b := ordered[i%len(ordered)]
			if r.Context().Err() != nil {
				rec.Status, rec.Outcome = 499, "cancelled"
				return
			}
			moreLeft := i+1 < attempts || ci+1 < len(chain)
			res := g.attempt(x, b, moreLeft)
			switch res.skipped {
			case coolingDown:
				cooling++
				continue
			case rateLimited:
				limited++
				if minWait == 0 || res.wait < minWait {
					minWait = res.wait
				}
				continue
			}
			tried++
			if res.committed || !res.retryable {
				return res.recorded
			}
			last = res.err
		}
	}
	if r.Context().Err() != nil {
		// The client left between attempts; nobody is there to answer.
		rec.Status, rec.Outcome = 499, "cancelled"
		return
	}
	if tried == 0 && limited > 0 {
		last = &providers.APIError{Status: http.StatusTooManyRequests,
			RetryAfter: strconv.Itoa(int(minWait.Seconds()) + 1),
			Message:    fmt.Sprintf("model %q: every deployment is at its rpm/tpm limit; retry later", alias)}
	} else if tried == 0 && cooling > 0 {
		last = &providers.APIError{Status: http.StatusServiceUnavailable,
			Message: fmt.Sprintf("model %q: every deployment is cooling down after repeated failures; retry later", alias)}
	}
	if last == nil {
		last = &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: no deployment could be reached", alias)}
	}
	rec.Status, rec.Outcome = last.Status, "error"
	last.Write(w, cf)
	return false
}

// route is one alias as dispatch walks it, fixed when the gateway is built.
type route struct {
	alias    string
	backends []*backend
	attempts int
}

// routeFor settles how many tries an alias gets: every deployment once by
// default, or 1 + num_retries / max_retries when configured. max_retries
// is read from the alias's first entry in the file so that the answer does
// not depend on the shuffle.
func (g *Gateway) routeFor(alias string) route {
	bs := g.backends[alias]
	n := len(bs)
	retries := -1
	if g.models.Router.NumRetries > 0 {
		retries = g.models.Router.NumRetries
	}
	if len(bs) > 0 && bs[0].dep.MaxRetries != nil {
		retries = *bs[0].dep.MaxRetries
	}
	if retries >= 0 {
		n = retries + 1
	}
	if n < 1 {
		n = 1
	}
	return route{alias: alias, backends: bs, attempts: n}
}

// attempt makes one upstream call and relays its answer if it is good.
func (g *Gateway) attempt(x *exchange, b *backend, moreLeft bool) result {
	w, r, cf, body, info, rec := x.w, x.r, x.cf, x.body, x.info, x.rec
	now := g.now()
	adm, wait, probe := b.state.admit(now, b.policy)
	if adm != admitted {
		return result{skipped: adm, wait: wait}
	}
	upBody, dropUsage, err := b.upstreamBody(cf, body, info)
	if err != nil {
		b.state.release(probe)
		apiErr := asAPIError(err)
		rec.Status, rec.Outcome = apiErr.Status, "error"
		apiErr.Write(w, cf)
		return result{committed: true}
	}
	rec.UpstreamModel, rec.Provider = b.dep.Model, b.dep.Provider

	timeout := b.timeout
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	// For a stream, stream_timeout also bounds the wait for the first
	// event: a backend that accepts the request and then says nothing is
	// as stuck as one that stops half way.
	var gap *gapWatch
	if info.Stream && b.gap > 0 {
		gap = newGapWatch(b.gap, cancel)
		defer gap.stop()
	}
	req, err := b.newRequest(ctx, cf, r, upBody, info.Stream)
	if err != nil {
		return g.requestFailed(x, b, err, probe, moreLeft)
	}
	b.state.inFlight.Add(1)
	defer b.state.inFlight.Add(-1)

	// The attempt names the alias the deployment belongs to, which is a
	// fallback's when the request has moved on to one.
	att := Attempt{Alias: b.dep.Alias, Deployment: b.dep.ID, Provider: b.dep.Provider, Upstream: b.dep.Model, Retrying: moreLeft}
	resp, err := b.client.Do(req)
	if err == nil {
		resp, err = b.renewCredentials(ctx, cf, r, upBody, info.Stream, resp)
	}
	if err != nil {
		var credErr *credentialError
		if errors.As(err, &credErr) {
			return g.requestFailed(x, b, err, probe, moreLeft)
		}
		att.Duration = g.now().Sub(now)
		if r.Context().Err() != nil {
			b.state.release(probe)
			rec.Status, rec.Outcome = 499, "cancelled"
			att.Err, att.Retrying = "client_gone", false
			g.obs.Attempt(att)
			return result{committed: true}
		}
		var apiErr *providers.APIError
		if gap.fired() {
			att.Err = "stream_timeout"
			apiErr = &providers.APIError{Status: http.StatusGatewayTimeout,
				Message: fmt.Sprintf("model %q: upstream sent nothing within the stream timeout of %s", rec.Alias, b.gap)}
		} else {
			att.Err = errorClass(ctx, err)
			apiErr = transportError(ctx, err, rec.Alias, timeout)
		}
		g.obs.Attempt(att)
		b.state.failure(g.now(), b.policy, att.Err == "connection_refused")
		return result{retryable: true, err: apiErr}
	}
	defer resp.Body.Close()
	att.Status = resp.StatusCode
	if status := resp.StatusCode; status >= 300 {
		var apiErr *providers.APIError
		if status < 400 {
			// A redirect is never followed (the key would go with it), and
			// it is no answer: the api_base is wrong.
			apiErr = &providers.APIError{Status: http.StatusBadGateway,
				Message: fmt.Sprintf("model %q: upstream redirected (%d); check the deployment's api_base", rec.Alias, status)}
			status = http.StatusBadGateway
			att.Err = "redirect"
		} else {
			errBody, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			apiErr = b.parseUpstreamError(status, resp.Header, errBody)
			apiErr.Message = fmt.Sprintf("model %q: upstream returned %d: %s", rec.Alias, status, apiErr.Message)
		}
		apiErr.RetryAfter = resp.Header.Get("Retry-After")
		retryable := retryableStatus(status)
		if b.ep.credentialsRefused(status, apiErr.Message) {
			// Wrong credentials are the deployment's fault, not the
			// request's: another deployment may serve it.
			retryable = true
		}
		att.Duration = g.now().Sub(now)
		att.Retrying = retryable && moreLeft
		if retryable {
			b.state.failure(g.now(), b.policy, false)
		} else {
			b.state.release(probe)
		}
		g.obs.Attempt(att)
		if !retryable || !moreLeft {
			rec.Status, rec.Outcome = status, "error"
			apiErr.Write(w, cf)
			return result{committed: true}
		}
		return result{retryable: true, err: apiErr}
	}

	var res result
	if info.Stream {
		res = g.relayStream(x, ctx, gap, b, resp, dropUsage, now)
	} else {
		res = g.relayBody(x, ctx, b, resp, now, timeout)
	}
	att.Duration = g.now().Sub(now)
	switch {
	case res.committed && rec.Outcome == "ok":
		b.state.success(rec.TTFT)
		b.state.addTokens(rec.InputTokens + rec.CacheReadTokens + rec.CacheCreation5m + rec.CacheCreation1h + rec.OutputTokens)
	case rec.Outcome == "cancelled" || r.Context().Err() != nil:
		// The client went away: that says nothing about the deployment.
		b.state.release(probe)
		att.Err = "client_gone"
		if !res.committed {
			applyUsage(rec, providers.Usage{}, b)
			rec.Status, rec.Outcome = 499, "cancelled"
			res = result{committed: true}
		}
	default:
		b.state.failure(g.now(), b.policy, false)
		att.Err = res.class
		if att.Err == "" {
			att.Err = "stream_broken"
		}
	}
	att.Retrying = !res.committed && moreLeft
	g.obs.Attempt(att)
	return res
}

// renewCredentials sends the request once more with fresh credentials
// when the cloud refused the cached ones (an access token revoked or
// expired early, rotated AWS keys) and fresh ones can be had, so that
// one stale token does not fail a client's request. Any other answer is
// returned as it came.
func (b *backend) renewCredentials(ctx context.Context, cf providers.Format, r *http.Request, body []byte, stream bool, resp *http.Response) (*http.Response, error) {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return resp, nil
	}
	errBody, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(errBody))
	msg := b.parseUpstreamError(resp.StatusCode, resp.Header, errBody).Message
	if !b.ep.credentialsRefused(resp.StatusCode, msg) || !b.ep.rejected() {
		return resp, nil
	}
	req, err := b.newRequest(ctx, cf, r, body, stream)
	if err != nil {
		return nil, err
	}
	return b.client.Do(req)
}

// requestFailed ends an attempt whose upstream request could not be
// built: a body the cloud's dialect refuses is the client's error; a
// credential that could not be had is the deployment's, and another one
// may serve the request.
func (g *Gateway) requestFailed(x *exchange, b *backend, err error, probe, moreLeft bool) result {
	w, cf, rec := x.w, x.cf, x.rec
	var apiErr *providers.APIError
	if errors.As(err, &apiErr) {
		b.state.release(probe)
		rec.Status, rec.Outcome = apiErr.Status, "error"
		apiErr.Write(w, cf)
		return result{committed: true}
	}
	var credErr *credentialError
	if !errors.As(err, &credErr) {
		b.state.release(probe)
		return result{retryable: true, err: &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: building upstream request failed", rec.Alias)}}
	}
	apiErr = b.upstreamError(&providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: %s", rec.Alias, credErr.msg)})
	g.obs.Attempt(Attempt{Alias: b.dep.Alias, Deployment: b.dep.ID, Provider: b.dep.Provider, Upstream: b.dep.Model, Err: "credentials", Retrying: moreLeft})
	b.state.failure(g.now(), b.policy, false)
	return result{retryable: true, err: apiErr}
}

func errorClass(ctx context.Context, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection_reset"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "dns"
	}
	// A certificate the gateway does not trust, an alert from the upstream
	// (it wants a client certificate, or refuses ours), or plain HTTP
	// where TLS was expected.
	var verifyErr *tls.CertificateVerificationError
	var rhErr tls.RecordHeaderError
	var opErr *net.OpError
	if errors.As(err, &verifyErr) || errors.As(err, &rhErr) || (errors.As(err, &opErr) && opErr.Op == "remote error") {
		return "tls"
	}
	if errors.As(err, &opErr) && opErr.Timeout() {
		return "connect_timeout"
	}
	return "transport"
}

// transportError names the alias and the failure class, never the
// upstream URL (it may carry credentials) or key.
func transportError(ctx context.Context, err error, alias string, timeout time.Duration) *providers.APIError {
	switch errorClass(ctx, err) {
	case "timeout":
		return &providers.APIError{Status: http.StatusGatewayTimeout, Message: fmt.Sprintf("model %q: upstream did not answer within %s", alias, timeout)}
	case "connection_refused":
		return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream is not running (connection refused)", alias)}
	case "dns":
		return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream host name does not resolve", alias)}
	case "connect_timeout":
		return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream did not accept a connection in time", alias)}
	case "tls":
		return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: TLS with the upstream failed (its certificate is not trusted, or it wants a client certificate); see the deployment's tls_ca_file, tls_client_cert and tls_client_key", alias)}
	}
	return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream connection failed", alias)}
}

func retryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}
