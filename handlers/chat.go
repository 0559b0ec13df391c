package handlers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// maxUpstreamBody bounds a non-streaming upstream answer held in memory
// for translation or usage reading.
const maxUpstreamBody = 64 << 20

// maxPooledBody keeps one huge request from pinning its buffer in the pool.
const maxPooledBody = 1 << 20

func (g *Gateway) serveChat(w http.ResponseWriter, r *http.Request, cf providers.Format) {
	start := g.now()
	id := IdentityFrom(r.Context())
	rec := newRecord(r, id, start, cf)

	req, ok := g.readRequest(w, r, cf, id)
	if !ok {
		return
	}
	defer g.releaseRequest(req)
	body, info, alias := req.body, req.info, req.alias
	if max := g.opts.MaxConcurrentPerKey; max > 0 && id != nil {
		if !g.states.acquireKey(id.KeyID, max) {
			(&providers.APIError{Status: http.StatusTooManyRequests, RetryAfter: "1", Code: "concurrency_limit",
				Message: fmt.Sprintf("key %q already has %d requests in progress, the gateway's limit; retry when one finishes", id.KeyID, max)}).Write(w, cf)
			return
		}
		defer g.states.releaseKey(id.KeyID)
	}
	rec.Alias, rec.Stream = alias, info.Stream

	recorded := g.dispatch(w, r, cf, body, info, alias, rec)

	if !recorded {
		rec.Latency = g.now().Sub(start)
		if g.opts.Recorder != nil {
			g.opts.Recorder.Enqueue(*rec)
		}
	}
	g.obs.Done(rec)
}

// clientRequest is a chat or count_tokens body read, parsed as far as the
// model, and resolved to an alias the caller may use.
type clientRequest struct {
	buf   *bytes.Buffer
	body  []byte
	info  providers.RequestInfo
	alias string
}

// readRequest reads and checks the body; on failure it has answered the
// client in its format and returns false.
func (g *Gateway) readRequest(w http.ResponseWriter, r *http.Request, cf providers.Format, id *Identity) (*clientRequest, bool) {
	req := &clientRequest{buf: g.bodyPool.Get().(*bytes.Buffer)}
	req.buf.Reset()
	fail := func(e *providers.APIError) (*clientRequest, bool) {
		g.releaseRequest(req)
		e.Write(w, cf)
		return nil, false
	}
	if apiErr := g.readBody(w, r, req.buf); apiErr != nil {
		return fail(apiErr)
	}
	req.body = req.buf.Bytes()
	if tooDeep(req.body, maxJSONDepth) {
		return fail(&providers.APIError{Status: http.StatusBadRequest, Code: "json_too_deep",
			Message: fmt.Sprintf("request body nests JSON deeper than %d levels", maxJSONDepth)})
	}
	var info providers.RequestInfo
	var err error
	if cf == providers.FormatResponses {
		info, err = g.readResponsesRequest(r, id, req.body)
	} else {
		info, err = providers.PeekRequest(req.body)
	}
	if err != nil {
		return fail(asAPIError(err))
	}
	alias, ok := g.models.Resolve(info.Model)
	if !ok {
		return fail(&providers.APIError{Status: http.StatusNotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("model %q is not configured on this gateway; GET /v1/models lists the models this key may use", info.Model)})
	}
	if !id.Allows(alias) {
		return fail(&providers.APIError{Status: http.StatusForbidden, Param: "model",
			Message: fmt.Sprintf("key %q may not use model %q", id.KeyID, alias)})
	}
	if info.Responses != nil {
		info.Responses.Alias = alias
	}
	req.info, req.alias = info, alias
	return req, true
}

// releaseRequest returns the body buffer to the pool unless one huge
// request grew it.
func (g *Gateway) releaseRequest(req *clientRequest) {
	if req.buf.Cap() <= maxPooledBody {
		g.bodyPool.Put(req.buf)
	}
	req.buf, req.body = nil, nil
}

// guard keeps a panic in a handler from reaching the server, which would
// drop the connection without a word: the client gets a 500 in its own
// format when nothing was sent yet, and the observer gets an attempt with
// Err "panic: ..." so the fault is logged.
func (g *Gateway) guard(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			msg := fmt.Sprint(v)
			if len(msg) > 200 {
				msg = msg[:200]
			}
			g.obs.Attempt(Attempt{Err: "panic: " + msg})
			if !tw.wrote {
				(&providers.APIError{Status: http.StatusInternalServerError,
					Message: "the gateway failed while handling this request; the fault is logged"}).Write(tw, ClientFormat(r))
			}
		}()
		h(tw, r)
	}
}

// trackingWriter notes whether the response was started.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(p []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach Flush on the real writer.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// maxJSONDepth bounds nesting in client bodies. Real requests nest a few
// levels (tool schemas perhaps a dozen); deeper bodies only exist to make
// parsers recurse.
const maxJSONDepth = 128

// tooDeep reports whether body nests arrays and objects deeper than max.
// It counts brackets outside strings instead of parsing, so the hot path
// pays one scan that jumps from quote to quote with IndexByte.
func tooDeep(body []byte, max int) bool {
	depth := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			// Find the closing quote: the first one preceded by an even
			// number of backslashes.
			for {
				j := bytes.IndexByte(body[i+1:], '"')
				if j < 0 {
					return false
				}
				i += j + 1
				k := i - 1
				for k >= 0 && body[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
		case '{', '[':
			depth++
			if depth > max {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

func asAPIError(err error) *providers.APIError {
	var apiErr *providers.APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return &providers.APIError{Status: http.StatusBadRequest, Message: err.Error()}
}

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
func (g *Gateway) dispatch(w http.ResponseWriter, r *http.Request, cf providers.Format, body []byte, info providers.RequestInfo, alias string, rec *ledger.Record) (recorded bool) {
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
			res := g.attempt(w, r, cf, body, info, b, rec, moreLeft)
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
func (g *Gateway) attempt(w http.ResponseWriter, r *http.Request, cf providers.Format, body []byte, info providers.RequestInfo,
	b *backend, rec *ledger.Record, moreLeft bool) result {
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
	req, err := b.newRequest(ctx, cf, r, upBody)
	if err != nil {
		b.state.release(probe)
		return result{retryable: true, err: &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: building upstream request failed", rec.Alias)}}
	}
	b.state.inFlight.Add(1)
	defer b.state.inFlight.Add(-1)

	// The attempt names the alias the deployment belongs to, which is a
	// fallback's when the request has moved on to one.
	att := Attempt{Alias: b.dep.Alias, Deployment: b.dep.ID, Provider: b.dep.Provider, Upstream: b.dep.Model, Retrying: moreLeft}
	resp, err := b.client.Do(req)
	if err != nil {
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
			apiErr = g.transportError(ctx, err, rec.Alias, timeout)
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
			apiErr = b.upstreamError(providers.UpstreamError(status, errBody))
			apiErr.Message = fmt.Sprintf("model %q: upstream returned %d: %s", rec.Alias, status, apiErr.Message)
		}
		apiErr.RetryAfter = resp.Header.Get("Retry-After")
		retryable := retryableStatus(status)
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
		res = g.relayStream(w, r, ctx, gap, cf, b, resp, rec, info, dropUsage, now)
	} else {
		res = g.relayBody(w, r, ctx, cf, b, resp, rec, info, now, timeout)
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
func (g *Gateway) transportError(ctx context.Context, err error, alias string, timeout time.Duration) *providers.APIError {
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

// applyUsage puts the upstream's usage on the record, clamped: an upstream
// is not trusted to count sanely, and these numbers also feed the tpm
// windows and metrics, where a negative count would hand out capacity.
func applyUsage(rec *ledger.Record, u providers.Usage, b *backend) {
	rec.InputTokens, rec.CacheCreation5m = ledger.ClampTokens(u.InputTokens), ledger.ClampTokens(u.CacheCreation5m)
	rec.CacheCreation1h, rec.CacheReadTokens = ledger.ClampTokens(u.CacheCreation1h), ledger.ClampTokens(u.CacheReadTokens)
	rec.OutputTokens = ledger.ClampTokens(u.OutputTokens)
	if u.ServiceTier != "" {
		rec.ServiceTier = ledger.ServiceTierOf(u.ServiceTier)
	}
	b.prices.Apply(rec)
}

// relayHeaders copies the upstream's request id so support tickets can be
// traced; nothing else of the upstream's headers reaches the client.
func relayHeaders(dst http.Header, src http.Header) {
	for _, k := range [...]string{"Request-Id", "X-Request-Id"} {
		if v := src.Get(k); v != "" {
			dst.Set(k, v)
		}
	}
}

// upstreamRequestID is the provider's id for the request, kept on the
// ledger record so a row can be matched with the provider's own logs.
func upstreamRequestID(h http.Header) string {
	id := h.Get("Request-Id")
	if id == "" {
		id = h.Get("X-Request-Id")
	}
	if len(id) > 128 {
		id = id[:128]
	}
	return id
}

// relayBody handles a non-streaming answer.
func (g *Gateway) relayBody(w http.ResponseWriter, r *http.Request, ctx context.Context, cf providers.Format, b *backend,
	resp *http.Response, rec *ledger.Record, info providers.RequestInfo, start time.Time, timeout time.Duration) result {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody))
	if err != nil {
		if r.Context().Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return result{retryable: true, class: "timeout", err: &providers.APIError{Status: http.StatusGatewayTimeout,
				Message: fmt.Sprintf("model %q: upstream did not answer within %s", rec.Alias, timeout)}}
		}
		return result{retryable: true, class: errorClass(ctx, err), err: &providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("model %q: reading upstream answer failed", rec.Alias)}}
	}
	out, usage, err := b.route(cf).Response(raw, info)
	if err != nil {
		return result{retryable: true, class: "bad_response", err: b.upstreamError(&providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("model %q: upstream answer could not be read: %v", rec.Alias, err)})}
	}
	applyUsage(rec, usage, b)
	h := w.Header()
	relayHeaders(h, resp.Header)
	rec.RequestID = upstreamRequestID(resp.Header)
	rec.TTFT = g.now().Sub(start)
	rec.Status, rec.Outcome = http.StatusOK, "ok"
	g.keepResponse(r, info)
	recorded := g.commitRecord(rec)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	if _, werr := w.Write(out); werr != nil && !recorded {
		rec.Status, rec.Outcome = 499, "cancelled"
	}
	return result{committed: true, recorded: recorded}
}

// commitRecord writes rec before the client has the end of its answer,
// under durability sync, and reports whether it did; otherwise the record
// is enqueued when the request ends. The wait is bounded and not tied to
// the client: a client leaving now does not unbill what it was served.
func (g *Gateway) commitRecord(rec *ledger.Record) bool {
	c, ok := g.opts.Recorder.(Committer)
	if !g.opts.Durable || !ok {
		return false
	}
	rec.Latency = g.now().Sub(rec.Time)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Commit(ctx, *rec); err != nil {
		g.obs.Attempt(Attempt{Alias: rec.Alias, Err: "ledger_commit: " + err.Error()})
	}
	// Queued either way: enqueuing again would count the request twice.
	return true
}

// relayStream translates and flushes the upstream stream event by event.
// Headers are held back until the first translated bytes exist, so an
// upstream that fails before sending anything can still be retried.
func (g *Gateway) relayStream(w http.ResponseWriter, r *http.Request, ctx context.Context, gap *gapWatch,
	cf providers.Format, b *backend, resp *http.Response, rec *ledger.Record, info providers.RequestInfo, dropUsage bool, start time.Time) result {
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// A server that ignores "stream" answers with one JSON body; the
		// event reader would find no events and the client would get an
		// empty "success".
		return result{retryable: true, class: "bad_response", err: &providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("model %q: upstream answered a streaming request with a JSON body; it does not stream", rec.Alias)}}
	}
	br := g.readerPool.Get().(*bufio.Reader)
	defer func() { br.Reset(nil); g.readerPool.Put(br) }()
	var events providers.EventReader
	rt := b.route(cf)
	if rt.NDJSON {
		events = providers.NewNDJSONReader(resp.Body, br)
	} else {
		events = providers.NewSSEReader(resp.Body, br)
	}
	tr := rt.Stream(b.dep.Model, info, dropUsage)
	outp := g.outPool.Get().(*[]byte)
	out := (*outp)[:0]
	defer func() {
		// One huge event must not pin its grown buffer in the pool.
		if cap(out) <= maxPooledBody {
			*outp = out[:0]
			g.outPool.Put(outp)
		}
	}()

	rc := http.NewResponseController(w)
	committed := false
	commit := func() {
		h := w.Header()
		relayHeaders(h, resp.Header)
		rec.RequestID = upstreamRequestID(resp.Header)
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		committed = true
		rec.TTFT = g.now().Sub(start)
	}
	// held is what ends the stream under durability sync: from the event
	// that completes it on, output waits until the record is written.
	var held []byte
	fail := func(class string, apiErr *providers.APIError) result {
		applyUsage(rec, tr.Usage(), b)
		if !committed {
			return result{retryable: true, class: class, err: apiErr}
		}
		rec.Status, rec.Outcome = apiErr.Status, "error"
		out = append(out[:0], held...)
		if f, ok := tr.(providers.StreamFailer); ok {
			out = f.Fail(out, apiErr)
		} else {
			out = apiErr.AppendStreamError(out, cf)
		}
		_, _ = w.Write(out)
		_ = rc.Flush()
		return result{committed: true, class: class}
	}
	for {
		ev, err := events.Next()
		if err != nil {
			if err == io.EOF {
				break
			}
			switch {
			case r.Context().Err() != nil:
				applyUsage(rec, tr.Usage(), b)
				rec.Status, rec.Outcome = 499, "cancelled"
				return result{committed: true}
			case gap.fired():
				return fail("stream_timeout", &providers.APIError{Status: http.StatusGatewayTimeout,
					Message: fmt.Sprintf("model %q: upstream stream paused longer than %s", rec.Alias, b.gap)})
			case errors.Is(ctx.Err(), context.DeadlineExceeded):
				return fail("timeout", &providers.APIError{Status: http.StatusGatewayTimeout,
					Message: fmt.Sprintf("model %q: upstream did not finish within the timeout", rec.Alias)})
			}
			if errors.Is(err, providers.ErrEventTooLarge) {
				return fail("bad_response", &providers.APIError{Status: http.StatusBadGateway,
					Message: fmt.Sprintf("model %q: upstream sent a stream event over %d MiB; the stream was stopped", rec.Alias, providers.MaxEventBytes>>20)})
			}
			return fail("stream_broken", &providers.APIError{Status: http.StatusBadGateway,
				Message: fmt.Sprintf("model %q: upstream stream broke off", rec.Alias)})
		}
		gap.reset()
		out, err = tr.Translate(out[:0], ev)
		if err != nil {
			apiErr := b.upstreamError(asUpstreamStreamError(err, rec.Alias))
			if !committed && !retryableStatus(apiErr.Status) {
				// The upstream refused before the client saw a byte, for
				// a reason another deployment would share: answer it as a
				// plain HTTP error, as a non-stream request would get.
				applyUsage(rec, tr.Usage(), b)
				rec.Status, rec.Outcome = apiErr.Status, "error"
				apiErr.Write(w, cf)
				return result{committed: true, class: "stream_error"}
			}
			return fail("stream_error", apiErr)
		}
		if len(out) == 0 {
			continue
		}
		if !committed {
			commit()
		}
		if held != nil || (g.opts.Durable && tr.Complete()) {
			held = append(held, out...)
			continue
		}
		if _, werr := w.Write(out); werr != nil || rc.Flush() != nil {
			applyUsage(rec, tr.Usage(), b)
			rec.Status, rec.Outcome = 499, "cancelled"
			return result{committed: true}
		}
	}
	if !tr.Complete() {
		return fail("stream_truncated", &providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("model %q: upstream stream ended before its end marker", rec.Alias)})
	}
	out = tr.Finish(append(out[:0], held...))
	if !committed {
		commit()
	}
	applyUsage(rec, tr.Usage(), b)
	rec.Status, rec.Outcome = http.StatusOK, "ok"
	g.keepResponse(r, info)
	recorded := g.commitRecord(rec)
	if len(out) > 0 {
		_, _ = w.Write(out)
		_ = rc.Flush()
	}
	return result{committed: true, recorded: recorded}
}

func retryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

func asUpstreamStreamError(err error, alias string) *providers.APIError {
	var apiErr *providers.APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream stream could not be translated: %v", alias, err)}
}
