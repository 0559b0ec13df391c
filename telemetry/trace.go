package telemetry

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/modelgate/modelgate/ledger"
)

// scope names the instrumentation in every span and metric.
const scope = "github.com/modelgate/modelgate/telemetry"

// maxContent bounds the prompt text a span carries when content capture is
// on: a span is no place for a whole conversation.
const maxContent = 16 << 10

// Tracer makes the spans of the gateway's requests. The zero value (and a
// nil *Tracer) traces without content.
type Tracer struct {
	// CaptureContent puts the request body (the prompt, up to 16 KiB) on
	// the request span as gen_ai.input.messages. Off by default: prompts
	// are the users' data, and trace back ends are seldom meant for it.
	CaptureContent bool
	// Metrics, when not nil, gets every finished request.
	Metrics *Metrics

	// last is the tracer of the provider last seen in a request's
	// context: the provider (Caddy's) is the same for every request, and
	// asking it for the tracer each time takes its lock and a map lookup.
	last atomic.Pointer[providerTracer]
}

type providerTracer struct {
	tp trace.TracerProvider
	tr trace.Tracer
}

// tracer is tp's tracer of this package's scope.
func (t *Tracer) tracer(tp trace.TracerProvider) trace.Tracer {
	if t == nil {
		return tp.Tracer(scope)
	}
	if pt := t.last.Load(); pt != nil && pt.tp == tp {
		return pt.tr
	}
	tr := tp.Tracer(scope)
	t.last.Store(&providerTracer{tp: tp, tr: tr})
	return tr
}

// Request is the span of one gateway operation. A nil *Request (tracing
// off) accepts every call and does nothing.
type Request struct {
	span     trace.Span
	tracer   trace.Tracer
	op       string // gen_ai.operation.name
	attempts int
	cooled   int
	alias    string
	// stream and maxTokens go on the span with the rest at Finish: one
	// SetAttributes call per span, not one per fact.
	stream    bool
	maxTokens int64
	// finish holds the finish reasons of the answer the client got, in
	// the order its choices gave them.
	finish []string
}

// maxFinish bounds the finish reasons a span keeps (one per choice).
const maxFinish = 16

// Answer notes the finish reasons in b, a whole answer or a stream event
// as sent to the client, for gen_ai.response.finish_reasons on the request
// span and the attempt's. A null reason (a stream's first events) is no
// reason. It does nothing when the span is not recording.
func (r *Request) Answer(b []byte) {
	if r == nil {
		return
	}
	// The fields that carry an answer's finish reason in the client
	// formats: Chat Completions, Messages, Gemini.
	for _, key := range [...]string{`"finish_reason":`, `"stop_reason":`, `"finishReason":`} {
		k := []byte(key)
		for rest := b; len(r.finish) < maxFinish; {
			i := bytes.Index(rest, k)
			if i < 0 {
				break
			}
			rest = bytes.TrimLeft(rest[i+len(k):], " \t\r\n")
			if len(rest) == 0 || rest[0] != '"' {
				continue
			}
			end := bytes.IndexByte(rest[1:], '"')
			if end < 0 {
				break
			}
			r.finish = append(r.finish, string(rest[1:1+end]))
			rest = rest[1+end:]
		}
	}
}

// StartRequest starts the span of a request under the span in ctx. It
// returns ctx unchanged and a nil *Request when that span is not
// recording: tracing is off or the trace was not sampled.
func (t *Tracer) StartRequest(ctx context.Context, endpoint ledger.Endpoint) (context.Context, *Request) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	tr := t.tracer(parent.TracerProvider())
	op := Operation(endpoint)
	ctx, span := tr.Start(ctx, op, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("gen_ai.operation.name", op)))
	return ctx, &Request{span: span, tracer: tr, op: op}
}

// Model names the span after the model the client asked for, as the GenAI
// conventions want ("chat claude-sonnet"), once the body is read; the
// request attributes are set when the span finishes.
func (r *Request) Model(alias string, stream bool, maxTokens int64) {
	if r == nil {
		return
	}
	r.alias, r.stream, r.maxTokens = alias, stream, maxTokens
	r.span.SetName(r.op + " " + alias)
}

// Content records the request body when the tracer captures content.
func (t *Tracer) Content(r *Request, body []byte) {
	if r == nil || t == nil || !t.CaptureContent {
		return
	}
	if len(body) > maxContent {
		body = body[:maxContent]
	}
	r.span.SetAttributes(attribute.String("gen_ai.input.messages", string(body)))
}

// Cooldown notes a deployment skipped because it is cooling down after
// failures, or at its rpm/tpm limit.
func (r *Request) Cooldown(deployment, why string) {
	if r == nil {
		return
	}
	r.cooled++
	r.span.AddEvent("deployment skipped", trace.WithAttributes(
		attribute.String("modelgate.deployment", deployment), attribute.String("modelgate.skip_reason", why)))
}

// Attempt is the span of one upstream call. A nil *Attempt does nothing.
type Attempt struct {
	span trace.Span
	ctx  context.Context
	req  *Request
	from int // the request's finish reasons before this attempt
}

// AttemptInfo is what an upstream attempt is known by when it starts.
type AttemptInfo struct {
	Alias      string // the alias the deployment belongs to: a fallback's once the request moved on
	Deployment string
	Provider   string
	Upstream   string // the upstream model name
}

// StartAttempt starts the child span of one upstream call. ctx is the
// call's context; the returned one carries the span.
func (r *Request) StartAttempt(ctx context.Context, a AttemptInfo) (context.Context, *Attempt) {
	if r == nil {
		return ctx, nil
	}
	r.attempts++
	ctx, span := r.tracer.Start(ctx, r.op+" "+a.Upstream, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", r.op),
			attribute.String("gen_ai.provider.name", ProviderName(a.Provider)),
			attribute.String("gen_ai.request.model", a.Upstream),
			attribute.String("modelgate.alias", a.Alias),
			attribute.String("modelgate.deployment", a.Deployment),
			attribute.Int("modelgate.attempt", r.attempts),
			attribute.Bool("modelgate.fallback", r.alias != "" && a.Alias != r.alias),
		))
	return ctx, &Attempt{span: span, ctx: ctx, req: r, from: len(r.finish)}
}

// Inject writes the W3C trace context (traceparent, tracestate) into the
// upstream request's headers h, so the provider's trace continues the
// client's. With a recording attempt that is the attempt's span; else the
// span context in ctx when there is one (Caddy's tracing on, the trace not
// sampled); else, with tracing off, the client's own headers go upstream
// unchanged: the gateway builds its upstream requests afresh, and without
// this a caller's trace would stop at the gateway.
func (a *Attempt) Inject(ctx context.Context, h, client http.Header) {
	a.InjectTrace(ctx, h, client.Values("Traceparent"), client.Values("Tracestate"))
}

// InjectTrace is Inject given the client's traceparent and tracestate
// values instead of its headers, for a request core that holds only
// those (upstream.ClientMeta).
func (a *Attempt) InjectTrace(ctx context.Context, h http.Header, traceparent, tracestate []string) {
	if a != nil {
		ctx = a.ctx
	}
	if trace.SpanContextFromContext(ctx).IsValid() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
		return
	}
	if len(traceparent) > 0 {
		h["Traceparent"] = slices.Clone(traceparent)
		if len(tracestate) > 0 {
			h["Tracestate"] = slices.Clone(tracestate)
		}
	}
}

// End ends the attempt: the upstream status (0 when none came), the
// failure class ("" when it succeeded) and whether another attempt follows.
func (a *Attempt) End(status int, errClass string, retrying bool) {
	if a == nil {
		return
	}
	if errClass == "" && status >= 300 {
		// The conventions' error.type for an HTTP failure is its status.
		errClass = strconv.Itoa(status)
	}
	attrs := []attribute.KeyValue{attribute.Bool("modelgate.retrying", retrying)}
	if f := a.req.finish[a.from:]; len(f) > 0 {
		attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", f))
	}
	if status > 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", status))
	}
	if errClass != "" {
		attrs = append(attrs, attribute.String("error.type", errClass))
		a.span.SetStatus(codes.Error, errClass)
	}
	a.span.SetAttributes(attrs...)
	a.span.End()
}

// Finish ends the request span with the values of its ledger record and
// hands the record to the metrics. deployment is the id of the deployment
// that served (or last failed) the request, "" when none was tried.
func (t *Tracer) Finish(r *Request, rec *ledger.Record, deployment string) {
	if t != nil && t.Metrics != nil {
		t.Metrics.Record(rec, deployment)
	}
	if r == nil {
		return
	}
	if r.alias == "" && rec.Alias != "" {
		r.Model(rec.Alias, rec.Stream, 0)
	}
	s := r.span
	attrs := make([]attribute.KeyValue, 0, 28)
	if r.alias != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", r.alias), attribute.Bool("gen_ai.request.stream", r.stream))
	}
	attrs = append(attrs,
		attribute.String("modelgate.key_id", rec.KeyID),
		attribute.String("modelgate.workspace", rec.Workspace),
		attribute.String("modelgate.outcome", string(rec.Outcome)),
		attribute.String("modelgate.endpoint", string(rec.Endpoint)),
		attribute.Int("http.response.status_code", rec.Status),
		attribute.Int("modelgate.attempts", r.attempts),
		attribute.Int("modelgate.retries", max(r.attempts-1, 0)),
		attribute.Int("modelgate.cooldown_skips", r.cooled),
		attribute.Float64("modelgate.cost_usd", float64(rec.CostPicoUSD)/1e12),
	)
	if rec.Provider != "" {
		attrs = append(attrs,
			attribute.String("gen_ai.provider.name", ProviderName(rec.Provider)),
			attribute.String("gen_ai.response.model", rec.UpstreamModel),
			attribute.String("modelgate.deployment", deployment))
	}
	if r.maxTokens > 0 {
		attrs = append(attrs, attribute.Int64("gen_ai.request.max_tokens", r.maxTokens))
	}
	if len(r.finish) > 0 {
		attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", r.finish))
	}
	if rec.RequestID != "" {
		attrs = append(attrs, attribute.String("gen_ai.response.id", rec.RequestID))
	}
	if rec.SessionID != "" {
		attrs = append(attrs, attribute.String("modelgate.session", rec.SessionID))
	}
	if rec.Agent != "" {
		attrs = append(attrs, attribute.String("modelgate.agent", rec.Agent))
	}
	if rec.Alias != "" && rec.Alias != r.alias {
		attrs = append(attrs, attribute.String("modelgate.fallback_alias", rec.Alias))
	}
	cacheCreation := rec.CacheCreation5m + rec.CacheCreation1h
	if in := rec.InputTokens + rec.CacheReadTokens + cacheCreation; in > 0 || rec.OutputTokens > 0 {
		// gen_ai.usage.input_tokens counts every input token, cached or
		// not; the cache attributes say how many of them were.
		attrs = append(attrs,
			attribute.Int64("gen_ai.usage.input_tokens", in),
			attribute.Int64("gen_ai.usage.output_tokens", rec.OutputTokens),
			attribute.Int64("gen_ai.usage.cache_read.input_tokens", rec.CacheReadTokens),
			attribute.Int64("gen_ai.usage.cache_creation.input_tokens", cacheCreation))
	}
	if rec.TTFT > 0 {
		attrs = append(attrs, attribute.Float64("modelgate.time_to_first_token", rec.TTFT.Seconds()))
	}
	if rec.Outcome == ledger.OutcomeError {
		attrs = append(attrs, attribute.String("error.type", statusClass(rec.Status)))
		s.SetStatus(codes.Error, statusClass(rec.Status))
	}
	s.SetAttributes(attrs...)
	s.End()
}
