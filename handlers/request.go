package handlers

// The entry of chat, messages and responses requests: reading and
// checking the body, then handing the exchange to dispatch.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/telemetry"
)

// maxPooledBody keeps one huge request from pinning its buffer in the pool.
const maxPooledBody = 1 << 20

// serve is the core: it admits c (budgets, rate limits), dispatches it
// over its alias's chain, relays the answer to out and keeps its record.
// ctx is the client's: its end cancels the call.
func (g *Gateway) serve(ctx context.Context, c *Call, out Sink) {
	start := g.now()
	cf := c.Format
	id := c.Identity
	rec := newRecord(c, id, start)
	// The request span starts before anything can refuse the request and
	// ends with its record, whichever way it leaves. Tracing off, span is
	// nil and ctx is untouched.
	ctx, span := g.opts.Telemetry.StartRequest(ctx, rec.Endpoint)
	var x *exchange
	defer func() {
		deployment := ""
		if x != nil {
			deployment = x.deployment
		}
		g.opts.Telemetry.Finish(span, rec, deployment)
	}()
	if g.opts.Durable && g.opts.LedgerDown != nil {
		if err := g.opts.LedgerDown(); err != nil {
			// durability sync promises no answer without its record: while
			// the ledger is known to fail, say so at once instead of
			// holding the answer for the commit's bound and then
			// delivering it unrecorded. Nothing is spent, nothing queued,
			// and the body is not read: a refused request holds no memory.
			rec.Status, rec.Outcome = http.StatusServiceUnavailable, ledger.OutcomeRefused
			out.Fail(ledgerUnavailable())
			rec.Latency = g.now().Sub(start)
			g.obs.Done(rec)
			return
		}
	}

	req, ok := g.readRequest(ctx, c, out)
	if !ok {
		return
	}
	defer g.releaseRequest(req)
	body, info, alias := req.body, req.info, req.alias
	if t, ok := info.Turn.(*providers.ResponsesTurn); ok && t.Background() && c.run == nil {
		// Answered at once; the run is its own request, recorded once.
		if follow := g.startBackground(ctx, c, out, body, t); follow != nil {
			g.releaseRequest(req)
			follow()
		}
		return
	}
	span.Model(alias, info.Stream, info.MaxTokens())
	g.opts.Telemetry.Content(span, body)
	rec.Alias, rec.Stream = alias, info.Stream
	rec.SessionID, rec.Agent = resolveSession(c.Session, body, cf, info)
	rec.SessionID = g.screenSessionID(alias, id, rec.SessionID)
	if at := g.opts.AgentTelemetry; at != nil && rec.SessionID != "" {
		at.Saw(rec.SessionID)
	}
	if wc := g.opts.WorkContexts; wc != nil && rec.SessionID != "" {
		wc.Note(rec.KeyID, rec.SessionID, c.Session.Repo, c.Session.Branch, start)
	}
	turn, body, info := g.admitTurn(ctx, turnIn{cf: cf, id: id, rec: rec, body: body, info: info,
		repo: c.Session.Repo, header: out.Header()},
		func(b []byte) (providers.RequestInfo, error) { return g.parsers[cf](ctx, c, b) })
	if turn.Refusal != nil {
		g.refuse(out, rec, start, turn.Refusal)
		return
	}
	defer func() {
		_, parts := partsOf(x)
		g.opts.Breaker.Done(ctx, turn, rec.CostPicoUSD+parts)
	}()
	var hold *policy.Reservation
	if id != nil {
		ws := g.opts.Controls.WorkspaceLimits(id.Workspace)
		est := g.estimate(alias, body, info)
		var refusal *providers.APIError
		hold, refusal = g.budgetsFor(alias).AdmitEstimate(ctx, id, ws, rec.SessionID, est.budget, est.lease)
		if refusal != nil {
			d, stop, ok := g.downgrade(ctx, out.Header(), id, ws, rec, alias, body, info, est)
			if ok {
				alias, est, hold, refusal = d.alias, d.est, d.hold, nil
			} else if stop != nil {
				refusal = stop
			}
		}
		if refusal != nil {
			g.refuse(out, rec, start, refusal)
			return
		}
		rec.Ticket = hold.Ticket()
		rec.Lease, rec.LeasePico = hold.Lease()
		// Settled once the answer is complete (relay.go); this is for
		// every other way out, before the record is queued.
		defer settleBudget(hold, rec)
		bound, lowered := hold.OutputBound()
		// A budgeted request without an output bound is sent the one its
		// estimate assumed: unbounded, one long answer could cost far
		// more than it reserved (where output costs nothing it cannot).
		added := hold != nil && est.budget.Tokens > 0 && est.budget.TokenPico > 0 && info.OutputLimit() == 0
		if added && !lowered {
			bound = est.budget.Tokens
		}
		if lowered || added {
			if body, info, ok = g.boundOutput(out, cf, rec, start, body, info, bound, lowered, added, hold); !ok {
				return
			}
			est.tokens = info.InputBytes(body) + bound*info.Choices()
		}
		rate, decision, refusal := g.opts.Rates.AdmitWithDefault(ctx, id, ws, est.tokens, int64(g.opts.MaxConcurrentPerKey))
		setRateHeaders(out.Header(), cf, decision)
		if refusal != nil {
			settleBudget(hold, rec)
			g.refuse(out, rec, start, refusal)
			return
		}
		defer func() {
			parts, _ := partsOf(x)
			rate.Release(rec.TotalTokens() + parts)
		}()
	}

	x = &exchange{ctx: ctx, call: c, out: out, cf: cf, body: body, info: info, alias: alias, rec: rec, span: span, hold: hold}
	recorded := g.dispatch(x)
	g.settle(x)

	if !recorded {
		rec.Latency = g.now().Sub(start)
		if g.opts.Recorder != nil {
			g.opts.Recorder.Enqueue(*rec)
		}
	}
	g.opts.CacheWatch.Observe(rec)
	g.obs.Done(rec)
}

// refuse answers a request a budget or rate limit stopped. Nothing was
// spent: the record says so, and reports and budgets count it as nothing.
func (g *Gateway) refuse(out Sink, rec *ledger.Record, start time.Time, refusal *providers.APIError) {
	rec.Status, rec.Outcome = refusal.Status, ledger.OutcomeRefused
	out.Fail(refusal)
	rec.Latency = g.now().Sub(start)
	if g.opts.Recorder != nil {
		g.opts.Recorder.Enqueue(*rec)
	}
	g.obs.Done(rec)
}

// requestEstimate bounds what a request can use before it runs: what
// budgets and tpm windows reserve until it settles.
type requestEstimate struct {
	tokens int64 // input and output tokens
	// budget is its cost at the dearest deployment the alias could reach
	// (input and output priced apart, each at its dearest).
	budget policy.Estimate
	// lease is how long the request can run, every attempt and fallback
	// included, and its record take to be written: a shared reservation
	// that outlives it was left by a crashed instance.
	lease time.Duration
	// fees are the server tools' fees per use budget holds (in
	// budget.InputPico): no service tier discounts them.
	fees int64
}

// estimate bounds a request's use: every byte of the input the upstream
// will be sent (the body, and a Responses turn's stored history) as an
// input token, since no tokenizer makes more tokens than bytes, and the
// output bound once for every choice asked for (n, candidateCount).
func (g *Gateway) estimate(alias string, body []byte, info providers.RequestInfo) requestEstimate {
	input := info.InputBytes(body)
	output := everyChoice(info.OutputBound(g.opts.DefaultMaxTokens), info.Choices())
	bounds := g.bounds[alias]
	e := requestEstimate{tokens: input + output, lease: bounds.lease}
	// Content given by reference (a URL, a file id), or fetched by a
	// server tool the provider runs (web search and fetch, code
	// execution), is billed far more tokens than its bytes: its budget
	// input is the context window. Web searches are billed per search
	// besides, at most max_uses each.
	var fees int64
	if bounds.inputPrice > 0 {
		tool, referenced := info.PricedContent(body)
		if tool != "" || referenced {
			input = max(input, bounds.window)
		}
		if tool != "" {
			fees = ledger.WebSearchFees(providers.WebSearchUses(body))
		}
	}
	// A budgeted request without a bound is sent this one (serve),
	// so its estimate assumes it; the tpm estimate above keeps the
	// default until then, as for a request no budget applies to.
	e.budget.Tokens = info.OutputBound(cmp.Or(bounds.maxOutput, g.opts.DefaultMaxTokens))
	e.budget.InputPico = min(ledger.Prices{Input: bounds.inputPrice}.Cost(&ledger.Record{InputTokens: input})+fees, ledger.MaxCost)
	e.fees = fees
	// Prices are bounded (ledger.MaxPrice) and choices by 2^20: the
	// product fits.
	e.budget.TokenPico = bounds.tokenPico * info.Choices()
	return e
}

// HeaderMaxTokensLowered names, on an answer, the output bound per choice
// the gateway sent the upstream instead of the client's (or the one it
// would have added), because the request's worst case did not fit in
// what was left of its budgets.
const HeaderMaxTokensLowered = "X-Modelgate-Max-Tokens-Lowered"

// HeaderMaxTokensAdded names, on an answer, the output bound per choice
// the gateway sent the upstream for a request under a budget whose
// client set none: the alias's model_info.max_output_tokens, else
// default_max_tokens, or less when HeaderMaxTokensLowered says so too.
const HeaderMaxTokensAdded = "X-Modelgate-Max-Tokens-Added"

// boundOutput sends the request with its output bound set to bound,
// lowered from the client's or added where it set none, and says which
// in headers; on failure it has answered the client.
func (g *Gateway) boundOutput(out Sink, cf providers.Format, rec *ledger.Record, start time.Time, body []byte, info providers.RequestInfo, bound int64, lowered, added bool, hold *policy.Reservation) ([]byte, providers.RequestInfo, bool) {
	sent, bounded, err := info.WithOutputLimit(body, bound, cf.BoundMember())
	if err != nil {
		settleBudget(hold, rec)
		g.refuse(out, rec, start, &providers.APIError{Status: http.StatusBadRequest, Message: "request body could not be given an output bound: " + err.Error()})
		return nil, info, false
	}
	n := strconv.FormatInt(bound, 10)
	if lowered {
		out.Header().Set(HeaderMaxTokensLowered, n)
	}
	if added {
		out.Header().Set(HeaderMaxTokensAdded, n)
	}
	return sent, bounded, true
}

// aliasBounds is what an alias's chain (itself, then its fallbacks)
// fixes for the budgets of its requests.
type aliasBounds struct {
	// lease is how long a budget reservation is held at most.
	lease time.Duration
	// maxOutput is the smallest model_info.max_output_tokens among the
	// deployments the chain may reach; 0: none sets one.
	maxOutput int64
	// inputPrice and tokenPico are the dearest input price (cache writes
	// included: ledger.Prices.DearestInput) and cost of one output token
	// among those deployments, each apart: a cost grows
	// with its price, so these give estimate the dearest deployment's
	// cost without a walk of the chain per request.
	inputPrice, tokenPico int64
	// window is the largest context window (model_info.max_input_tokens)
	// of those deployments, providers.DefaultContextWindow where one sets
	// none: the input of a request carrying referenced content.
	window int64
	// notFree is why a request the chain serves may cost money ("" when
	// every deployment is free), unpriced why it has no price a bound can
	// hold it to, for at_cap downgrade (downgrade.go).
	notFree, unpriced string
}

func boundsOf(chain []aliasLink) aliasBounds {
	var longest time.Duration
	var b aliasBounds
	for _, l := range chain {
		for _, d := range l.deployments {
			longest = max(longest, d.Timeout())
			p := d.Prices()
			b.inputPrice = max(b.inputPrice, p.DearestInput())
			b.tokenPico = max(b.tokenPico, ledger.Prices{Output: p.Output}.Cost(&ledger.Record{OutputTokens: 1}))
			b.window = max(b.window, cmp.Or(d.Entry().Info.MaxInputTokens, providers.DefaultContextWindow))
			if n := d.Entry().Info.MaxOutputTokens; n > 0 && (b.maxOutput == 0 || n < b.maxOutput) {
				b.maxOutput = n
			}
		}
	}
	// A retry and a fallback may each take as long, then the writer's
	// batch; past that the request is gone.
	b.lease = 2*longest + time.Minute
	b.notFree, b.unpriced = notFree(chain), unpriced(chain)
	return b
}

// settleBudget settles the request's budget reservation at the cost its
// record has now, and puts on the record what its lease still holds for
// it (what the record's insert takes off the lease). Called once the
// answer is complete, before its last bytes are written (so a request the
// client sends next finds the room), and again before the record is
// queued; a nil hold does nothing.
func settleBudget(hold *policy.Reservation, rec *ledger.Record) {
	if hold == nil {
		return
	}
	hold.Settle(countedCost(rec))
	rec.Lease, rec.LeasePico = hold.Lease()
}

// requestParser reads a client's body far enough to route it.
type requestParser func(ctx context.Context, c *Call, body []byte) (providers.RequestInfo, error)

// buildParsers chooses, once, how each client format's body is read: the
// format's own parser, given the model and action of a Gemini URL, except
// that a Responses request also has its stored history resolved and a
// Converse request's model is its URL's, mapped to an alias.
func (g *Gateway) buildParsers() {
	for _, f := range providers.ClientFormats() {
		parse := f.Parser()
		g.parsers[f] = func(_ context.Context, c *Call, body []byte) (providers.RequestInfo, error) {
			return parse(body, c.Model, c.Action)
		}
	}
	g.parsers[providers.FormatResponses] = g.readResponsesRequest
	g.parsers[providers.FormatConverse] = g.parseConverse
}

// clientRequest is a chat or count_tokens body read, parsed as far as the
// model, and resolved to an alias the caller may use.
type clientRequest struct {
	buf   *[]byte
	held  int64 // body memory taken, given back by releaseRequest
	body  []byte
	info  providers.RequestInfo
	alias string
}

// readRequest reads and checks c's body; on failure it has answered the
// client in its format and returns false.
func (g *Gateway) readRequest(ctx context.Context, c *Call, out Sink) (*clientRequest, bool) {
	cf, id := c.Format, c.Identity
	// The body's buffer lives in the call: one value per request.
	req := &c.req
	*req = clientRequest{buf: g.bodyPool.Get().(*[]byte)}
	handedOver := false
	defer func() {
		// A parser's panic (recovered by net/http) must not keep the
		// body's memory counted for ever.
		if !handedOver && req.buf != nil {
			g.releaseRequest(req)
		}
	}()
	fail := func(e *providers.APIError) (*clientRequest, bool) {
		g.releaseRequest(req)
		out.Fail(e)
		return nil, false
	}
	if apiErr := g.readCallBody(ctx, c, req); apiErr != nil {
		return fail(apiErr)
	}
	if tooDeep(req.body, maxJSONDepth) {
		return fail(&providers.APIError{Status: http.StatusBadRequest, Code: "json_too_deep",
			Message: fmt.Sprintf("request body nests JSON deeper than %d levels", maxJSONDepth)})
	}
	// A Responses or Converse body is parsed whole, into many small
	// values (an empty Converse content block, 3 bytes, decodes into
	// 120): parsing is most of the working set, held before for the
	// body and, for Responses, after for the stored history the input
	// grew by.
	if cf == providers.FormatResponses || cf == providers.FormatConverse {
		if apiErr := g.holdWorkingSet(ctx, c, req, int64(len(req.body))); apiErr != nil {
			return fail(apiErr)
		}
	}
	info, err := g.parsers[cf](ctx, c, req.body)
	if err != nil {
		return fail(asAPIError(err))
	}
	if cf == providers.FormatResponses {
		if apiErr := g.holdWorkingSet(ctx, c, req, info.InputBytes(req.body)); apiErr != nil {
			return fail(apiErr)
		}
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
	info.SetAlias(alias)
	req.alias = alias
	if info, err = g.screenSecrets(ctx, c, cf, id, req, info); err != nil {
		return fail(asAPIError(err))
	}
	req.info = info
	handedOver = true
	return req, true
}

// releaseRequest returns the body buffer to the pool unless one huge
// request grew it.
func (g *Gateway) releaseRequest(req *clientRequest) {
	if req.buf == nil {
		// Given back already (a background create that follows its run).
		return
	}
	if cap(*req.buf) <= maxPooledBody {
		*req.buf = (*req.buf)[:0]
		g.bodyPool.Put(req.buf)
	}
	g.bodyMem.release(req.held)
	req.buf, req.body, req.held = nil, nil, 0
}

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

// exchange is one call on its way through dispatch and relay: what every
// attempt needs, in one value instead of a long parameter list.
type exchange struct {
	// ctx is the client's: its end cancels the call. It lives here, as
	// on an http.Request, because the exchange is the call's own value.
	ctx   context.Context
	call  *Call
	out   Sink
	cf    providers.Format // the client's wire format
	body  []byte
	info  providers.RequestInfo
	alias string
	rec   *ledger.Record // filled in as the request goes; written when it ends
	// span is the request's trace span, nil when tracing is off.
	span *telemetry.Request
	// deployment is the id of the deployment last tried, for telemetry.
	deployment string
	// hold is the request's budget reservation, nil when none.
	hold *policy.Reservation
	// resume is the request's stream cut after the client got its start,
	// while a deployment is sought to continue it (resume.go).
	resume *resumeState
	// parts are the tokens and cost of the request's cut parts, each
	// recorded on its own (suspend) and not on rec: the rate windows and
	// the breaker count them with rec's.
	partTokens, partPico int64
	// cut is the last attempt's answer as far as its client had it: the
	// cut floor's measure (relayed.go).
	cut cutMeter
}

// everyChoice is the output bound of c choices of at most output tokens
// each, held below 2^62 so that a client's huge max_tokens times its n
// cannot wrap negative.
func everyChoice(output, c int64) int64 {
	if output > 0 && c > 1 {
		return min(output, (1<<62)/c) * c
	}
	return output
}

// partsOf is x's cut parts' tokens and cost; none for a request that
// never reached an exchange.
func partsOf(x *exchange) (tokens, pico int64) {
	if x == nil {
		return 0, 0
	}
	return x.partTokens, x.partPico
}
