package telemetry

import (
	"context"
	"testing"
)

// TestMetricsOnlyWhenAsked: no OTEL_* variable, no pipeline (not even the
// SDK's default localhost endpoint); an endpoint or an exporter name
// turns it on; "none" keeps it off.
func TestMetricsOnlyWhenAsked(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_METRICS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:4318/v1/metrics"}, true},
		{map[string]string{"OTEL_METRICS_EXPORTER": "console"}, true},
	} {
		getenv := func(k string) string { return c.env[k] }
		if got := MetricsWanted(getenv); got != c.want {
			t.Errorf("%v: %v, want %v", c.env, got, c.want)
		}
		m, err := NewMetrics(context.Background(), getenv)
		if err != nil || (m != nil) != c.want {
			t.Errorf("%v: NewMetrics = %v, %v", c.env, m, err)
		}
		_ = m.Shutdown(context.Background())
	}
}
