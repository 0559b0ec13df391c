package handlers

// Dispatch: which deployment gets the request, retries, fallbacks,
// cooldowns, and how one upstream attempt ends.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/telemetry"
	"github.com/modelgate/modelgate/upstream"
)

// result is how one upstream attempt ended.
type result struct {
	committed bool // the client has seen headers or bytes: no retry possible
	recorded  bool // the record is already in the database (durability sync)
	retryable bool // another deployment may succeed
	skipped   upstream.Admission
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

// upstreamCall is one attempt's upstream answer on its way to the client:
// what relayBody and relayStream need besides the context of the call.
type upstreamCall struct {
	x     *exchange
	d     *upstream.Deployment
	resp  *http.Response
	start time.Time // when the attempt began, for the time to first token
	// gap cancels the call when a stream pauses too long; nil when
	// stream_timeout is unset or the answer is not a stream.
	gap *gapWatch
	// dropUsage: the client did not ask for the usage the route had the
	// upstream include; the stream's translator leaves it out.
	dropUsage bool
	// moreLeft: another attempt follows this one should it fail, so a
	// stream it breaks may be continued there (resume.go).
	moreLeft bool
	// first gives the call up when no content came within
	// first_token_timeout.
	first *gapWatch
}

// dispatch tries the alias's deployments, then its fallbacks, until one
// answers or none is left.
//
// It reports whether the record is already written (durability sync).
func (g *Gateway) dispatch(x *exchange) (recorded bool) {
	alias, rec := x.alias, x.rec
	chain := g.chains[alias]
	id := x.call.Identity
	var last *providers.APIError
	var minWait time.Duration
	cooling, limited := 0, 0
	tried := 0
	pin := g.sessionPin(x, id)
	for ci, link := range chain {
		if ci > 0 && (!id.Allows(link.alias) || !seatFits(x, link)) {
			// A fallback is another alias: a key limited to some aliases
			// must not reach the others through it.
			continue
		}
		ordered := g.selector.Order(link.deployments)
		if pin.deployment != "" {
			ordered = upstream.PinFirst(ordered, pin.deployment)
		}
		attempts := link.attempts
		for i := 0; i < attempts; i++ {
			b := ordered[i%len(ordered)]
			if x.ctx.Err() != nil {
				rec.Status, rec.Outcome = 499, ledger.OutcomeCancelled
				return
			}
			moreLeft := i+1 < attempts || ci+1 < len(chain)
			res := g.attempt(x, b, moreLeft)
			pin.saw(b, res, rec)
			switch res.skipped {
			case upstream.CoolingDown:
				cooling++
				x.span.Cooldown(b.Entry().ID, "cooling_down")
				continue
			case upstream.RateLimited:
				limited++
				x.span.Cooldown(b.Entry().ID, "rate_limited")
				if minWait == 0 || res.wait < minWait {
					minWait = res.wait
				}
				continue
			}
			tried++
			if res.committed || !res.retryable {
				pin.settle(g.now())
				return res.recorded
			}
			last = res.err
		}
	}
	if x.ctx.Err() != nil {
		// The client left between attempts; nobody is there to answer.
		rec.Status, rec.Outcome = 499, ledger.OutcomeCancelled
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
	rec.Status, rec.Outcome = last.Status, ledger.OutcomeError
	g.writeError(x, last)
	return false
}

// sessionPin is a request's session affinity: the deployment its session
// is pinned to, and what the attempts showed about it.
type sessionPin struct {
	table      *upstream.Affinity // nil: no affinity for this request
	key        string
	deployment string // pinned before the request; "" if none
	failed     bool   // the pinned deployment failed or is cooling down
	served     string // the deployment that answered, if one did
}

// sessionPin looks up the deployment the request's session is pinned to.
// A pin to a deployment the models file no longer has counts as failed.
func (g *Gateway) sessionPin(x *exchange, id *policy.Identity) *sessionPin {
	p := &sessionPin{}
	if g.affinity == nil || x.rec.SessionID == "" {
		return p
	}
	keyID := ""
	if id != nil {
		keyID = id.KeyID
	}
	p.table, p.key = g.affinity, upstream.AffinityKey(keyID, x.alias, x.rec.SessionID)
	if d, ok := p.table.Get(p.key, g.now()); ok {
		p.deployment = d
		if _, known := g.byID[d]; !known {
			p.failed = true
		}
	}
	return p
}

// saw takes one attempt's result into account.
func (p *sessionPin) saw(b *upstream.Deployment, res result, rec *ledger.Record) {
	if p.table == nil {
		return
	}
	id := b.Entry().ID
	if id == p.deployment && (res.skipped == upstream.CoolingDown || (res.skipped == upstream.Admitted && res.retryable)) {
		p.failed = true
	}
	if res.skipped == upstream.Admitted && res.committed && rec.Outcome == ledger.OutcomeOK {
		p.served = id
	}
}

// settle moves the pin: a session without one is pinned to the
// deployment that served it, and a pinned session moves only when its
// deployment failed (or left the models file). A pinned deployment that
// was merely at its own rpm/tpm limit keeps the pin: its cache is still
// there next minute.
func (p *sessionPin) settle(now time.Time) {
	if p.table == nil || p.served == "" {
		return
	}
	if p.deployment == "" || p.failed || p.served == p.deployment {
		p.table.Set(p.key, p.served, now)
	}
}

// aliasLink is one alias of an alias chain (the alias, then its
// fallbacks) as dispatch walks it, fixed when the gateway is built.
type aliasLink struct {
	alias       string
	deployments []*upstream.Deployment
	attempts    int
}

// linkFor settles how many tries an alias gets: every deployment once by
// default, or 1 + num_retries / max_retries when configured. max_retries
// is read from the alias's first entry in the file so that the answer does
// not depend on the shuffle.
func (g *Gateway) linkFor(alias string) aliasLink {
	bs := g.backends[alias]
	n := len(bs)
	retries := -1
	if g.models.Router.NumRetries > 0 {
		retries = g.models.Router.NumRetries
	}
	if len(bs) > 0 && bs[0].Entry().MaxRetries != nil {
		retries = *bs[0].Entry().MaxRetries
	}
	if retries >= 0 {
		n = retries + 1
	}
	if n < 1 {
		n = 1
	}
	return aliasLink{alias: alias, deployments: bs, attempts: n}
}

// attempt makes one upstream call and relays its answer if it is good.
func (g *Gateway) attempt(x *exchange, b *upstream.Deployment, moreLeft bool) result {
	cf, body, info, rec := x.cf, x.body, x.info, x.rec
	now := g.now()
	adm, wait, probe := b.Admit(now)
	if adm != upstream.Admitted {
		return result{skipped: adm, wait: wait}
	}
	upBody, dropUsage, err := b.Body(cf, body, info)
	if err == nil && x.resume != nil {
		var ok bool
		if upBody, ok = resumeBody(x, b, upBody); ok {
			upBody, ok = g.screenContinuation(x, upBody)
		}
		if !ok {
			b.State().Release(probe)
			return result{retryable: true, err: x.resume.err}
		}
	}
	if err != nil {
		b.State().Release(probe)
		apiErr := asAPIError(err)
		rec.Status, rec.Outcome = apiErr.Status, ledger.OutcomeError
		g.writeError(x, apiErr)
		return result{committed: true}
	}
	rec.UpstreamModel, rec.Provider = b.Entry().Model, b.Entry().Provider
	markSeat(rec, b)
	x.cut = cutMeter{}

	timeout := b.Timeout()
	ctx, cancel := context.WithTimeout(x.ctx, timeout)
	defer cancel()
	// For a stream, stream_timeout also bounds the wait for the first
	// event: a backend that accepts the request and then says nothing is
	// as stuck as one that stops half way.
	var gap *gapWatch
	if info.Stream && b.StreamTimeout() > 0 {
		gap = newGapWatch(b.StreamTimeout(), cancel)
		defer gap.stop()
	}
	var first *gapWatch
	if info.Stream && b.FirstTokenTimeout() > 0 && x.resume == nil {
		first = newGapWatch(b.FirstTokenTimeout(), cancel)
		defer first.stop()
	}
	x.deployment = b.Entry().ID
	ctx, span := x.span.StartAttempt(ctx, telemetry.AttemptInfo{Alias: b.Entry().Alias, Deployment: b.Entry().ID, Provider: b.Entry().Provider, Upstream: b.Entry().Model})
	req, err := b.NewRequest(ctx, cf, x.call.Client, upBody, info.Stream)
	if err != nil {
		span.End(0, "request", moreLeft)
		return g.requestFailed(x, b, err, probe, moreLeft)
	}
	span.InjectTrace(ctx, req.Header, x.call.Client.Traceparent, x.call.Client.Tracestate)
	b.State().Start()
	defer b.State().Done()

	// The attempt names the alias the deployment belongs to, which is a
	// fallback's when the request has moved on to one.
	att := Attempt{Alias: b.Entry().Alias, Deployment: b.Entry().ID, Provider: b.Entry().Provider, Upstream: b.Entry().Model, Retrying: moreLeft}
	// Every way out below reports the attempt to the observer; the span
	// ends with the same facts.
	defer func() { span.End(att.Status, att.Err, att.Retrying) }()
	resp, err := b.Do(req)
	if err == nil {
		resp, err = b.RenewCredentials(ctx, cf, x.call.Client, upBody, info.Stream, resp)
	}
	if err != nil {
		var credErr *upstream.CredentialError
		if errors.As(err, &credErr) {
			att.Err = "credentials"
			return g.requestFailed(x, b, err, probe, moreLeft)
		}
		att.Duration = g.now().Sub(now)
		if x.ctx.Err() != nil {
			b.State().Release(probe)
			rec.Status, rec.Outcome = 499, ledger.OutcomeCancelled
			att.Err, att.Retrying = "client_gone", false
			g.obs.Attempt(att)
			return result{committed: true}
		}
		var apiErr *providers.APIError
		if first.fired() {
			att.Err, apiErr = "first_token_timeout", firstTokenTimeout(rec.Alias, b)
		} else if gap.fired() {
			att.Err = "stream_timeout"
			apiErr = &providers.APIError{Status: http.StatusGatewayTimeout,
				Message: fmt.Sprintf("model %q: upstream sent nothing within the stream timeout of %s", rec.Alias, b.StreamTimeout())}
		} else {
			att.Err = upstream.ErrorClass(ctx, err)
			apiErr = upstream.TransportError(ctx, err, rec.Alias, timeout)
		}
		g.obs.Attempt(att)
		b.Failure(g.now(), att.Err == "connection_refused")
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
			apiErr = b.ParseError(status, resp.Header, errBody)
			apiErr.Message = fmt.Sprintf("model %q: upstream returned %d: %s", rec.Alias, status, apiErr.Message)
		}
		apiErr.RetryAfter = resp.Header.Get("Retry-After")
		retryable := retryableStatus(status)
		if b.CredentialsRefused(status, apiErr.Message) {
			// Wrong credentials are the deployment's fault, not the
			// request's: another deployment may serve it.
			retryable = true
		}
		if seatRefused(b, status) {
			retryable = false
		}
		att.Duration = g.now().Sub(now)
		att.Retrying = retryable && moreLeft
		if retryable {
			b.Failure(g.now(), false)
		} else {
			b.State().Release(probe)
		}
		g.obs.Attempt(att)
		if !retryable || !moreLeft {
			rec.Status, rec.Outcome = status, ledger.OutcomeError
			g.writeError(x, apiErr)
			return result{committed: true}
		}
		return result{retryable: true, err: apiErr}
	}

	var res result
	// The cut floor's bound: the request's, else the one a budgeted
	// request is sent (as the estimate assumes).
	x.cut.accept(b, int(info.InputBytes(x.body)), everyChoice(info.OutputBound(cmp.Or(b.Entry().Info.MaxOutputTokens, g.opts.DefaultMaxTokens)), info.Choices()), now)
	call := &upstreamCall{x: x, d: b, resp: resp, start: now, gap: gap, dropUsage: dropUsage, moreLeft: moreLeft, first: first}
	if info.Stream {
		res = g.relayStream(ctx, call)
	} else {
		res = g.relayBody(ctx, call)
	}
	att.Duration = g.now().Sub(now)
	switch {
	case res.committed && rec.Outcome == ledger.OutcomeOK:
		b.State().Success(rec.TTFT)
		b.State().AddTokens(rec.TotalTokens())
	case rec.Outcome == ledger.OutcomeCancelled || x.ctx.Err() != nil:
		// The client went away: that says nothing about the deployment.
		b.State().Release(probe)
		att.Err = "client_gone"
		if !res.committed {
			// The upstream accepted the request before the client left
			// or cancelled (a background run's cancel): it bills the
			// input it was sent, which the cut floor counts.
			rec.Status, rec.Outcome = 499, ledger.OutcomeCancelled
			res = result{committed: true}
		}
	default:
		b.Failure(g.now(), false)
		att.Err = res.class
		if att.Err == "" {
			att.Err = "stream_broken"
		}
	}
	att.Retrying = !res.committed && moreLeft
	g.obs.Attempt(att)
	return res
}

// requestFailed ends an attempt whose upstream request could not be
// built: a body the cloud's dialect refuses is the client's error; a
// credential that could not be had is the deployment's, and another one
// may serve the request.
func (g *Gateway) requestFailed(x *exchange, b *upstream.Deployment, err error, probe, moreLeft bool) result {
	rec := x.rec
	var apiErr *providers.APIError
	if errors.As(err, &apiErr) {
		b.State().Release(probe)
		rec.Status, rec.Outcome = apiErr.Status, ledger.OutcomeError
		g.writeError(x, apiErr)
		return result{committed: true}
	}
	var credErr *upstream.CredentialError
	if !errors.As(err, &credErr) {
		b.State().Release(probe)
		return result{retryable: true, err: &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: building upstream request failed", rec.Alias)}}
	}
	apiErr = b.Redact(&providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: %s", rec.Alias, credErr.Error())})
	g.obs.Attempt(Attempt{Alias: b.Entry().Alias, Deployment: b.Entry().ID, Provider: b.Entry().Provider, Upstream: b.Entry().Model, Err: "credentials", Retrying: moreLeft})
	b.Failure(g.now(), false)
	return result{retryable: true, err: apiErr}
}

func retryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}
