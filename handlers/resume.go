package handlers

// Streams that survive their upstream: a stream that breaks after the
// client got part of the answer continues on the alias's next deployment
// or fallback, with that part as the assistant's prefill, spliced into
// the client's stream (providers.NewAnthropicResumed); a stream that sends
// no content within first_token_timeout is given up before the client
// got a byte. The wire-format work is in providers; here is only when.

import (
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/upstream"
)

// resumeState is a stream cut after the client got its start, waiting
// for a deployment to continue it.
type resumeState struct {
	next  *providers.Resumption      // the continuation's request and translator
	inner providers.StreamTranslator // the client's translator, as the cut stream used it
	err   *providers.APIError        // what ends the client's stream if none continues it
}

// journalFor is the journal of an attempt's stream: kept only when the
// stream could be continued elsewhere (an Anthropic upstream, or a chat
// one whose backend continues a prefill, with another attempt after it),
// so a lone deployment pays nothing. A continuation is not journaled: a
// stream is continued once.
func journalFor(x *exchange, b *upstream.Deployment, moreLeft bool) providers.StreamJournal {
	if !x.info.Stream || !moreLeft || x.resume != nil || !continues(x, b) {
		return nil
	}
	return providers.NewStreamJournal(b.Route(x.cf).Upstream)
}

// continues reports whether b can take part in a continuation: it speaks
// Anthropic Messages, or chat completions with an assistant_prefill.
func continues(x *exchange, b *upstream.Deployment) bool {
	switch b.Route(x.cf).Upstream {
	case providers.FormatAnthropic:
		return true
	case providers.FormatOpenAI:
		return b.Entry().AssistantPrefill != ""
	}
	return false
}

// streamTranslator is the client's translator for an attempt's stream:
// a new one (behind the secret firewall's), or the cut stream's, spliced,
// for its continuation.
func (g *Gateway) streamTranslator(x *exchange, rt *providers.Route, b *upstream.Deployment, dropUsage bool) providers.StreamTranslator {
	if x.resume != nil {
		return x.resume.next.Translator
	}
	return g.secretStream(x.call.Identity, x.alias, x.rec, rt.Stream(b.Entry().Model, x.info, dropUsage))
}

// suspend takes a stream broken after the client got its start out of
// the attempt, for the next deployment to continue, when what the client
// has can be its prefill. The cut part is recorded on its own (its
// deployment, its tokens as far as known, an error) and the request's
// record starts again for the continuation.
// (It takes the journal rather than the call, so that the call's exchange
// stays on the stack.)
func (g *Gateway) suspend(x *exchange, b *upstream.Deployment, journal providers.StreamJournal, tr providers.StreamTranslator, class string, apiErr *providers.APIError) (result, bool) {
	if journal == nil {
		return result{}, false
	}
	// The part is settled here, under the cut floor (relayed.go).
	next, err := journal.Resume(tr, x.cut.floor(tr.Usage(), g.now(), false, false))
	if err != nil {
		return result{}, false
	}
	part := *x.rec
	applyUsage(&part, next.Used, b)
	body, info, ok := boundRest(x, countedCost(&part))
	if !ok {
		return result{}, false
	}
	if upBody, _, err := b.Body(x.cf, body, info); err != nil {
		return result{}, false
	} else if _, err := next.Prefill(upBody, b.Entry().AssistantPrefill); err != nil {
		return result{}, false
	}
	x.body, x.info = body, info
	// The part is the request's: carved out of its reservation and
	// settled on its own record, counted once whichever record is
	// written first (policy.Reservation.CountPart).
	settled := x.hold.CountPart(countedCost(&part))
	x.partTokens += part.TotalTokens()
	x.partPico += part.CostPicoUSD
	part.Status, part.Outcome = apiErr.Status, ledger.OutcomeError
	part.Latency = g.now().Sub(part.Time)
	part.Ticket, part.Lease, part.LeasePico = settled.Ticket, settled.Lease, settled.LeasePico
	if g.opts.Recorder != nil {
		g.opts.Recorder.Enqueue(part)
	}
	g.obs.Done(&part)
	applyUsage(x.rec, providers.Usage{}, b)
	x.cut = cutMeter{}
	x.resume = &resumeState{next: next, inner: tr, err: apiErr}
	return result{retryable: true, class: class, err: apiErr}, true
}

// boundRest is the client's request for the rest of an answer whose cut
// part cost partPico: its output bound lowered to what the request's
// reservation still pays for, the part counted (policy.Reservation
// PartRoom). ok is false when nothing is left for the rest: the stream
// then ends with the error event rather than spend past its budget.
func boundRest(x *exchange, partPico int64) ([]byte, providers.RequestInfo, bool) {
	room, bounded := x.hold.PartRoom(partPico)
	if !bounded {
		return x.body, x.info, true
	}
	if room < 1 {
		return nil, x.info, false
	}
	if n := x.info.OutputLimit(); n > 0 && n <= room {
		return x.body, x.info, true
	}
	body, info, err := x.info.WithOutputLimit(x.body, room, x.cf.BoundMember())
	return body, info, err == nil
}

// resumeBody is the continuation's request for deployment b: the
// client's request with the answer so far as the assistant's prefill.
// ok is false for a deployment that cannot continue it (another upstream
// format), which is passed over.
func resumeBody(x *exchange, b *upstream.Deployment, upBody []byte) ([]byte, bool) {
	if b.Route(x.cf).Upstream != x.resume.next.Upstream || !continues(x, b) {
		return nil, false
	}
	out, err := x.resume.next.Prefill(upBody, b.Entry().AssistantPrefill)
	return out, err == nil
}

// writeError answers apiErr: as the whole answer, or, once the client has
// the start of a stream that no deployment continued, as the event that
// ends it.
func (g *Gateway) writeError(x *exchange, apiErr *providers.APIError) {
	if x.resume == nil {
		x.out.Fail(apiErr)
		return
	}
	_ = x.out.Write(appendStreamFailure(nil, x.resume.inner, x.resume.err, x.cf))
	_ = x.out.Flush()
	x.rec.Status, x.rec.Outcome = x.resume.err.Status, ledger.OutcomeError
}

// awaitFirst holds a stream's output until its first content arrives
// (first_token_timeout): preamble events' output is kept back in pre and
// goes out with the first content, when the watch stops and is cleared.
// ok false: out was kept back. (Plain pointers rather than the call, so
// the call's exchange stays on the stack.)
func awaitFirst(first **gapWatch, pre *[]byte, ev providers.Event, out []byte) ([]byte, bool) {
	if providers.AnthropicPreamble(ev) {
		*pre = append(*pre, out...)
		return out[:0], false
	}
	(*first).stop()
	*first = nil
	if len(*pre) == 0 {
		return out, true
	}
	return append(*pre, out...), true
}

func firstTokenTimeout(alias string, b *upstream.Deployment) *providers.APIError {
	return &providers.APIError{Status: http.StatusGatewayTimeout,
		Message: "model " + strconv.Quote(alias) + ": upstream sent no content within the first token timeout of " + b.FirstTokenTimeout().String()}
}
