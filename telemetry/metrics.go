package telemetry

import (
	"context"
	"fmt"
	"sync"

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

	// sets holds the attribute sets of the label combinations seen: one
	// request's five measurements would otherwise sort and hash the same
	// labels five times, and the combinations (alias, deployment, key,
	// outcome) are few and repeat. It is emptied when it reaches maxSets,
	// so a stream of new keys cannot grow it without bound.
	mu   sync.Mutex
	sets map[setKey]*labelSets
}

// maxSets bounds Metrics.sets.
const maxSets = 4096

type setKey struct{ op, alias, provider, deployment, key, outcome string }

// labelSets are the measurement options of one label combination: the
// plain labels, and with each gen_ai.token.type.
type labelSets struct {
	base                                    metric.MeasurementOption
	input, cacheRead, cacheCreation, output metric.MeasurementOption
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
	return newMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res)))
}

// newMetrics makes the instruments on mp.
func newMetrics(mp *sdkmetric.MeterProvider) (*Metrics, error) {
	var err error
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
	ls := m.labels(setKey{Operation(rec.Endpoint), rec.Alias, ProviderName(rec.Provider), deployment, rec.KeyID, string(rec.Outcome)})
	m.duration.Record(ctx, rec.Latency.Seconds(), ls.base)
	if rec.TTFT > 0 {
		m.ttft.Record(ctx, rec.TTFT.Seconds(), ls.base)
	}
	if rec.CostPicoUSD > 0 {
		m.cost.Add(ctx, float64(rec.CostPicoUSD)/1e12, ls.base)
	}
	// The same four types as the Prometheus modelgate_tokens_total.
	for _, t := range [...]struct {
		n   int64
		opt metric.MeasurementOption
	}{{rec.InputTokens, ls.input}, {rec.CacheReadTokens, ls.cacheRead}, {rec.CacheCreation5m + rec.CacheCreation1h, ls.cacheCreation}, {rec.OutputTokens, ls.output}} {
		if t.n > 0 {
			m.tokens.Record(ctx, t.n, t.opt)
		}
	}
}

// labels returns the attribute sets of k, made on first use.
func (m *Metrics) labels(k setKey) *labelSets {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ls, ok := m.sets[k]; ok {
		return ls
	}
	if m.sets == nil || len(m.sets) >= maxSets {
		m.sets = make(map[setKey]*labelSets)
	}
	base := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", k.op),
		attribute.String("gen_ai.request.model", k.alias),
		attribute.String("gen_ai.provider.name", k.provider),
		attribute.String("modelgate.deployment", k.deployment),
		attribute.String("modelgate.key_id", k.key),
		attribute.String("modelgate.outcome", k.outcome),
	}
	typed := func(typ string) metric.MeasurementOption {
		s := attribute.NewSet(append(base[:len(base):len(base)], attribute.String("gen_ai.token.type", typ))...)
		return metric.WithAttributeSet(s)
	}
	ls := &labelSets{base: metric.WithAttributeSet(attribute.NewSet(base...)),
		input: typed("input"), cacheRead: typed("cache_read"), cacheCreation: typed("cache_creation"), output: typed("output")}
	m.sets[k] = ls
	return ls
}

// Shutdown exports what is left and stops the pipeline.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.provider.Shutdown(ctx)
}
