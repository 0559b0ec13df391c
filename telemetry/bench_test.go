package telemetry

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/modelgate/modelgate/ledger"
)

// BenchmarkTracingOn is what the gateway's own telemetry adds to a traced,
// sampled request: the request and attempt spans with their attributes
// through a batch span processor (the exporter drops them, so the OTLP
// encoding, which Caddy's exporter does for every span, is not counted)
// and the OTLP metrics of the finished request, its finish reasons read
// from a 1 KB answer. Caddy's server span is
// made once, outside the loop: it is Caddy's cost, not the gateway's.
func BenchmarkTracingOn(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	m, err := newMetrics(mp)
	if err != nil {
		b.Fatal(err)
	}
	tr := &Tracer{Metrics: m}
	ctx, server := tp.Tracer("caddy").Start(context.Background(), "server")
	defer server.End()
	rec := &ledger.Record{Alias: "oa", KeyID: "key-1", Workspace: "default", Endpoint: ledger.EndpointChatCompletions,
		Provider: "openai", UpstreamModel: "gpt-x", InputTokens: 120, OutputTokens: 30, Status: 200, Outcome: ledger.OutcomeOK,
		CostPicoUSD: 1_000_000, RequestID: "chatcmpl-1", Latency: 20 * time.Millisecond, TTFT: 10 * time.Millisecond}
	client := http.Header{}
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("word ", 200) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":30}}`)
	b.ReportAllocs()
	for b.Loop() {
		h := http.Header{}
		rctx, req := tr.StartRequest(ctx, ledger.EndpointChatCompletions)
		req.Model("oa", false, 100)
		actx, a := req.StartAttempt(rctx, AttemptInfo{Alias: "oa", Deployment: "oa-1", Provider: "openai", Upstream: "gpt-x"})
		a.Inject(actx, h, client)
		req.Answer(answer)
		a.End(200, "", false)
		tr.Finish(req, rec, "oa-1")
	}
}
