// Package telemetry turns what the gateway already knows about a request
// (its ledger record, its upstream attempts) into OpenTelemetry spans and
// metrics with the GenAI semantic conventions.
//
// Spans are made with the TracerProvider of the span already in the
// request's context: Caddy's tracing handler puts its server span there
// and owns the exporter (it honours the OTEL_* variables). With no
// recording span in the context the package does nothing, so a gateway
// without tracing pays one context lookup per request.
//
// Metrics go over OTLP only when the OTEL_* variables ask for it; see
// NewMetrics.
package telemetry
