package handlers

// Relay: an upstream answer on its way back to the client, whole or
// streamed, and what it leaves on the ledger record.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/upstream"
)

// applyUsage puts the upstream's usage on the record, clamped: an upstream
// is not trusted to count sanely, and these numbers also feed the tpm
// windows and metrics, where a negative count would hand out capacity.
func applyUsage(rec *ledger.Record, u providers.Usage, b *upstream.Deployment) {
	rec.InputTokens, rec.CacheCreation5m = ledger.ClampTokens(u.InputTokens), ledger.ClampTokens(u.CacheCreation5m)
	rec.CacheCreation1h, rec.CacheReadTokens = ledger.ClampTokens(u.CacheCreation1h), ledger.ClampTokens(u.CacheReadTokens)
	rec.OutputTokens = ledger.ClampTokens(u.OutputTokens)
	if u.ServiceTier != "" {
		rec.ServiceTier = ledger.ServiceTierOf(u.ServiceTier)
	}
	b.Prices().Apply(rec)
	ledger.ChargeWebSearches(rec, u.WebSearches)
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
	if id == "" {
		id = h.Get("X-Amzn-Requestid") // Bedrock's
	}
	if len(id) > 128 {
		id = id[:128]
	}
	return id
}

// relayBody handles a non-streaming answer.
func (g *Gateway) relayBody(ctx context.Context, c *upstreamCall) result {
	x, b, resp, start, timeout := c.x, c.d, c.resp, c.start, c.d.Timeout()
	out, cf, info, rec := x.out, x.cf, x.info, x.rec
	raw, err := upstream.ReadAnswer(resp)
	if err != nil {
		if x.ctx.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return result{retryable: true, class: "timeout", err: &providers.APIError{Status: http.StatusGatewayTimeout,
				Message: fmt.Sprintf("model %q: upstream did not answer within %s", rec.Alias, timeout)}}
		}
		return result{retryable: true, class: upstream.ErrorClass(ctx, err), err: &providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("model %q: reading upstream answer failed", rec.Alias)}}
	}
	answer, usage, err := b.Route(cf).Response(raw, info)
	if err != nil {
		return result{retryable: true, class: "bad_response", err: b.Redact(&providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("model %q: upstream answer could not be read: %v", rec.Alias, err)})}
	}
	applyUsage(rec, usage, b)
	x.cut.done = true
	answer = g.screenAnswer(x.call.Identity, x.alias, rec, cf, answer)
	x.span.Answer(answer)
	h := out.Header()
	relayHeaders(h, resp.Header)
	rec.RequestID = upstreamRequestID(resp.Header)
	rec.TTFT = g.now().Sub(start)
	rec.Status, rec.Outcome = http.StatusOK, ledger.OutcomeOK
	g.keepResponse(x.call.Identity, info, rec)
	settleBudget(x.hold, rec)
	recorded, handedBack := g.commitRecord(rec)
	if handedBack {
		out.Fail(ledgerUnavailable())
		return result{committed: true}
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(answer)))
	out.Start(http.StatusOK)
	if werr := out.Write(answer); werr != nil && !recorded {
		rec.Status, rec.Outcome = 499, ledger.OutcomeCancelled
	}
	return result{committed: true, recorded: recorded}
}

// commitRecord writes rec before the client has the end of its answer,
// under durability sync, and reports whether it did (recorded); otherwise
// the record is enqueued when the request ends. The wait is bounded and
// not tied to the client: a client leaving now does not unbill what it
// was served. handedBack: the database failed the write and the ledger
// gave the record back (ledger.ErrHandedBack), at its first failed
// attempt; rec is now the request's refusal (503, its usage kept: the
// upstream was paid), enqueued when the request ends, and the caller
// answers ledgerUnavailable instead of the answer's end.
func (g *Gateway) commitRecord(rec *ledger.Record) (recorded, handedBack bool) {
	c, ok := g.opts.Recorder.(Committer)
	if !g.opts.Durable || !ok {
		return false, false
	}
	rec.Latency = g.now().Sub(rec.Time)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Commit(ctx, *rec)
	if err != nil {
		g.obs.Attempt(Attempt{Alias: rec.Alias, Err: "ledger_commit: " + err.Error()})
	}
	if errors.Is(err, ledger.ErrHandedBack) {
		rec.Status, rec.Outcome = http.StatusServiceUnavailable, ledger.OutcomeError
		return false, true
	}
	// Otherwise queued either way: enqueuing again would count the
	// request twice.
	return true, false
}

// ledgerUnavailable is the answer of a durable request whose record
// cannot be written now.
func ledgerUnavailable() *providers.APIError {
	return &providers.APIError{Status: http.StatusServiceUnavailable, RetryAfter: "5", Code: "ledger_unavailable",
		Message: "this gateway records every request before answering (durability sync) and its usage ledger cannot be written now; retry shortly"}
}

// relayStream translates and flushes the upstream stream event by event.
// Headers are held back until the first translated bytes exist, so an
// upstream that fails before sending anything can still be retried.
func (g *Gateway) relayStream(ctx context.Context, c *upstreamCall) result {
	x, b, resp, start, gap := c.x, c.d, c.resp, c.start, c.gap
	sink, cf, info, rec := x.out, x.cf, x.info, x.rec
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// A server that ignores "stream" answers with one JSON body; the
		// event reader would find no events and the client would get an
		// empty "success".
		return result{retryable: true, class: "bad_response", err: &providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("model %q: upstream answered a streaming request with a JSON body; it does not stream", rec.Alias)}}
	}
	br := g.readerPool.Get().(*bufio.Reader)
	defer func() { br.Reset(nil); g.readerPool.Put(br) }()
	rt := b.Route(cf)
	events := b.Events(rt, resp.Body, br)
	tr := g.streamTranslator(x, rt, b, c.dropUsage)
	outp := g.outPool.Get().(*[]byte)
	out := (*outp)[:0]
	defer func() {
		// One huge event must not pin its grown buffer in the pool.
		if cap(out) <= maxPooledBody {
			*outp = out[:0]
			g.outPool.Put(outp)
		}
	}()

	committed := x.resume != nil // a continuation's client has its start
	// journal notes what the client was sent, for a continuation
	// elsewhere should the stream break (resume.go); nil: none.
	first, pre, journal := c.first, []byte(nil), journalFor(x, b, c.moreLeft)
	commit := func() {
		h := sink.Header()
		relayHeaders(h, resp.Header)
		rec.RequestID = upstreamRequestID(resp.Header)
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		sink.Start(http.StatusOK)
		committed = true
		rec.TTFT = g.now().Sub(start)
	}
	// held is what ends the stream under durability sync: from the event
	// that completes it on, output waits until the record is written.
	var held []byte
	clientLeftAtEnd := false // or the upstream was cut off after the end
	// endWritten: the client was written the answer's end (the last write
	// that reached it left the translator complete), not merely held for
	// it (durability sync) or still owed.
	endWritten := false
	fail := func(class string, apiErr *providers.APIError) result {
		if !committed {
			applyUsage(rec, tr.Usage(), b)
			return result{retryable: true, class: class, err: apiErr}
		}
		applyUsage(rec, tr.Usage(), b)
		if held == nil {
			if res, ok := g.suspend(x, b, journal, tr, class, apiErr); ok {
				return res
			}
		}
		rec.Status, rec.Outcome = apiErr.Status, ledger.OutcomeError
		out = appendStreamFailure(append(out[:0], held...), tr, apiErr, cf)
		_ = sink.Write(out)
		_ = sink.Flush()
		return result{committed: true, class: class}
	}
	for {
		ev, err := events.Next()
		if err != nil {
			if err == io.EOF {
				break
			}
			// A client that leaves once it has the stream's end marker
			// (the OpenAI SDKs close at [DONE]) had the whole answer,
			// whether or not the upstream had closed its side yet: the
			// request is as complete as at the upstream's EOF, with any
			// usage the upstream had still to send estimated. So is one
			// whose upstream kept the answer open after its end marker
			// until stream_timeout or timeout cancelled the read (the
			// attempt's context covers all three): the client already
			// has the end, and an error event after it, a 504 record and
			// a failure against the deployment would all be wrong.
			if endWritten && ctx.Err() != nil {
				clientLeftAtEnd = true
				break
			}
			switch {
			case x.ctx.Err() != nil:
				applyUsage(rec, tr.Usage(), b)
				rec.Status, rec.Outcome = 499, ledger.OutcomeCancelled
				return result{committed: true}
			case first.fired():
				return fail("first_token_timeout", firstTokenTimeout(rec.Alias, b))
			case gap.fired():
				return fail("stream_timeout", &providers.APIError{Status: http.StatusGatewayTimeout,
					Message: fmt.Sprintf("model %q: upstream stream paused longer than %s", rec.Alias, b.StreamTimeout())})
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
		if journal != nil {
			journal.Add(ev)
		}
		out, err = tr.Translate(out[:0], ev)
		x.span.Answer(out)
		if err != nil {
			apiErr := b.Redact(asUpstreamStreamError(err, rec.Alias))
			if !committed && !retryableStatus(apiErr.Status) {
				// The upstream refused before the client saw a byte, for
				// a reason another deployment would share: answer it as a
				// plain HTTP error, as a non-stream request would get.
				applyUsage(rec, tr.Usage(), b)
				x.cut.done = true // refused, not cut
				rec.Status, rec.Outcome = apiErr.Status, ledger.OutcomeError
				sink.Fail(apiErr)
				return result{committed: true, class: "stream_error"}
			}
			return fail("stream_error", apiErr)
		}
		if first != nil {
			var ok bool
			if out, ok = awaitFirst(&first, &pre, ev, out); !ok {
				continue
			}
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
		if !endWritten && tr.Complete() {
			// The client is about to have its answer's end and may send
			// its next request at once: the budget it reserved goes back
			// first, but for what the answer cost.
			applyUsage(rec, tr.Usage(), b)
			settleBudget(x.hold, rec)
		}
		if werr := sink.Write(out); werr != nil || sink.Flush() != nil {
			applyUsage(rec, tr.Usage(), b)
			rec.Status, rec.Outcome = 499, ledger.OutcomeCancelled
			return result{committed: true}
		}
		x.cut.relay(out, g.now)
		endWritten = tr.Complete()
	}
	if !tr.Complete() {
		return fail("stream_truncated", &providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("model %q: upstream stream ended before its end marker", rec.Alias)})
	}
	out = tr.Finish(append(out[:0], held...))
	x.span.Answer(out[len(held):])
	if !committed {
		commit()
	}
	applyUsage(rec, tr.Usage(), b)
	// A client that left at the end had the whole answer; what usage the
	// upstream had still to send is the cut floor's to estimate.
	x.cut.done, x.cut.hadEnd = !clientLeftAtEnd, clientLeftAtEnd
	rec.Status, rec.Outcome = http.StatusOK, ledger.OutcomeOK
	g.keepResponse(x.call.Identity, info, rec)
	g.settle(x)
	recorded, handedBack := g.commitRecord(rec)
	if handedBack {
		// The client has everything but the end: an error event in its
		// place tells it the answer is not complete.
		out = appendStreamFailure(out[:0], tr, ledgerUnavailable(), cf)
		_ = sink.Write(out)
		_ = sink.Flush()
		return result{committed: true}
	}
	if len(out) > 0 {
		_ = sink.Write(out)
		_ = sink.Flush()
	}
	return result{committed: true, recorded: recorded}
}

// appendStreamFailure appends the error event that ends a stream the
// client already has a start of, in its format.
func appendStreamFailure(out []byte, tr providers.StreamTranslator, apiErr *providers.APIError, cf providers.Format) []byte {
	if u, ok := tr.(interface {
		Unwrap() providers.StreamTranslator
	}); ok {
		tr = u.Unwrap()
	}
	if f, ok := tr.(providers.StreamFailer); ok {
		return f.Fail(out, apiErr)
	}
	return apiErr.AppendStreamError(out, cf)
}

func asUpstreamStreamError(err error, alias string) *providers.APIError {
	var apiErr *providers.APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream stream could not be translated: %v", alias, err)}
}
