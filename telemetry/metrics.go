package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/modelgate/modelgate/ledger"
)

// Metrics exports the GenAI client metrics over OTLP: the same requests,
// tokens, latencies and cost the Prometheus /metrics endpoint counts, by
// alias, deployment, key and outcome. A nil *Metrics records nothing.
type Metrics struct {
	provider *sdkmetric.MeterProvider
	tokens   metric.Int64Histogram
	duration metric.Float64Histogram
	ttft     metric.Float64Histogram
	cost     metric.Float64Counter
}

// Env reads an environment variable; os.Getenv in production.
type Env func(string) string

// MetricsWanted reports whether the environment asks for metrics export:
// OTEL_METRICS_EXPORTER, or an OTLP endpoint for all signals or for
// metrics. Nothing is exported otherwise, not even to the SDK's default
// localhost endpoint.
func MetricsWanted(getenv Env) bool {
	e := getenv("OTEL_METRICS_EXPORTER")
	if e == "none" {
		return false
	}
	return e != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
}

// NewMetrics builds the OTLP metrics pipeline the OTEL_* variables
// describe (exporter, protocol, endpoint, headers, interval), or returns
// nil when they describe none. Shutdown flushes and stops it.
func NewMetrics(ctx context.Context, getenv Env) (*Metrics, error) {
	if !MetricsWanted(getenv) {
		return nil, nil
	}
	reader, err := autoexport.NewMetricReader(ctx)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry metrics: %w (check OTEL_METRICS_EXPORTER and OTEL_EXPORTER_OTLP_*)", err)
	}
	res, err := resource.Merge(resource.Default(), resource.Environment())
	if err != nil {
		res = resource.Default()
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	// The GenAI conventions' advised bucket boundaries: tokens, then
	// seconds for durations and time to first token.
	tokenBuckets := []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets := []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	m := &Metrics{provider: mp}
	meter := mp.Meter(scope)
	if m.tokens, err = meter.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens used per request, by token type."), metric.WithExplicitBucketBoundaries(tokenBuckets...)); err != nil {
		return nil, err
	}
	if m.duration, err = meter.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Request duration as the client saw it."), metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if m.ttft, err = meter.Float64Histogram("gen_ai.server.time_to_first_token", metric.WithUnit("s"),
		metric.WithDescription("Time until the first byte of the answer reached the client."), metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if m.cost, err = meter.Float64Counter("modelgate.cost", metric.WithUnit("USD"),
		metric.WithDescription("What the requests cost at the models file's prices.")); err != nil {
		return nil, err
	}
	return m, nil
}

// Record counts one finished request. deployment is the id of the
// deployment that served it, "" when none was tried.
func (m *Metrics) Record(rec *ledger.Record, deployment string) {
	if m == nil {
		return
	}
	ctx := context.Background()
	base := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", Operation(rec.Endpoint)),
		attribute.String("gen_ai.request.model", rec.Alias),
		attribute.String("gen_ai.provider.name", ProviderName(rec.Provider)),
		attribute.String("modelgate.deployment", deployment),
		attribute.String("modelgate.key_id", rec.KeyID),
		attribute.String("modelgate.outcome", string(rec.Outcome)),
	}
	attrs := metric.WithAttributes(base...)
	m.duration.Record(ctx, rec.Latency.Seconds(), attrs)
	if rec.TTFT > 0 {
		m.ttft.Record(ctx, rec.TTFT.Seconds(), attrs)
	}
	if rec.CostPicoUSD > 0 {
		m.cost.Add(ctx, float64(rec.CostPicoUSD)/1e12, attrs)
	}
	add := func(typ string, n int64) {
		if n > 0 {
			m.tokens.Record(ctx, n, metric.WithAttributes(append(base[:len(base):len(base)], attribute.String("gen_ai.token.type", typ))...))
		}
	}
	// The same four types as the Prometheus modelgate_tokens_total.
	add("input", rec.InputTokens)
	add("cache_read", rec.CacheReadTokens)
	add("cache_creation", rec.CacheCreation5m+rec.CacheCreation1h)
	add("output", rec.OutputTokens)
}

// Shutdown exports what is left and stops the pipeline.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.provider.Shutdown(ctx)
}
