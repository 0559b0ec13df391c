package caddymodule

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/modelgate/modelgate/ledger"
)

// metrics are Modelgate's Prometheus collectors. Caddy gives each config
// load a fresh registry; handlers of one config share it, so every
// collector is registered or, when another handler already did, reused.
type metrics struct {
	requests *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	attempts *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	ttft     *prometheus.HistogramVec
	mcpCalls *prometheus.CounterVec
}

func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// Label values are bounded: aliases and provider kinds come from the
// config, statuses are classes; never a client-supplied model or a key.
func newMetrics(reg prometheus.Registerer, app *App) (*metrics, error) {
	m := &metrics{}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	var err error
	if m.requests, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "modelgate", Name: "requests_total", Help: "Requests by alias, endpoint (chat_completions, messages, responses), provider and status class.",
	}, []string{"alias", "endpoint", "provider", "status"})); err != nil {
		return nil, err
	}
	if m.tokens, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "modelgate", Name: "tokens_total", Help: "Tokens by alias and type (input, cache_read, cache_creation, output).",
	}, []string{"alias", "type"})); err != nil {
		return nil, err
	}
	if m.attempts, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "modelgate", Name: "upstream_attempts_total", Help: "Upstream calls by alias, provider and outcome.",
	}, []string{"alias", "provider", "outcome"})); err != nil {
		return nil, err
	}
	if m.mcpCalls, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "modelgate", Name: "mcp_tool_calls_total", Help: "MCP tools/call requests by server (from mcp_servers) and outcome.",
	}, []string{"server", "outcome"})); err != nil {
		return nil, err
	}
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	if m.latency, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "modelgate", Name: "request_duration_seconds", Help: "Whole request latency by alias and provider.", Buckets: buckets,
	}, []string{"alias", "provider"})); err != nil {
		return nil, err
	}
	if m.ttft, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "modelgate", Name: "time_to_first_token_seconds", Help: "Time until the first byte reached the client, by alias.", Buckets: buckets,
	}, []string{"alias"})); err != nil {
		return nil, err
	}
	stat := func(name, help string, counter bool, read func(ledger.WriterStats) int64) error {
		f := func() float64 { return float64(read(app.Stats())) }
		var c prometheus.Collector
		if counter {
			c = prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "modelgate", Name: name, Help: help}, f)
		} else {
			c = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "modelgate", Name: name, Help: help}, f)
		}
		_, err := register(reg, c)
		return err
	}
	if err := stat("ledger_queue_depth", "Records waiting for the ledger database.", false,
		func(s ledger.WriterStats) int64 { return int64(s.QueueDepth) }); err != nil {
		return nil, err
	}
	if err := stat("ledger_dropped_total", "Records not queued because the ledger queue was full.", true,
		func(s ledger.WriterStats) int64 { return int64(s.Dropped) }); err != nil {
		return nil, err
	}
	if err := stat("ledger_write_errors_total", "Ledger batches that failed to write after retries.", true,
		func(s ledger.WriterStats) int64 { return int64(s.WriteErrors) }); err != nil {
		return nil, err
	}
	if err := stat("ledger_written_total", "Records written to the ledger.", true,
		func(s ledger.WriterStats) int64 { return int64(s.Written) }); err != nil {
		return nil, err
	}
	if _, err := register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "modelgate", Name: "rate_limit_local_fallbacks_total",
		Help: "Requests whose rate limits were counted in the process because the shared counter (Redis) failed."},
		func() float64 {
			if r := app.Rates(); r != nil {
				return float64(r.Degraded.Load())
			}
			return 0
		})); err != nil {
		return nil, err
	}
	if _, err := register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "modelgate", Name: "budget_local_fallbacks_total",
		Help: "Budgeted requests admitted on this process's own count because the shared reservation store (PostgreSQL) did not answer."},
		func() float64 {
			if b := app.Budgets(); b != nil {
				return float64(b.SharedFailures.Load())
			}
			return 0
		})); err != nil {
		return nil, err
	}
	if _, err := register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "modelgate", Name: "rate_limit_pending_releases",
		Help: "Slot releases and tpm settlements the shared counter (Redis) did not take, being retried in the background."},
		func() float64 {
			if r := app.Rates(); r != nil {
				return float64(r.Retrying.Load())
			}
			return 0
		})); err != nil {
		return nil, err
	}
	if err := registerBreakerMetrics(reg, app); err != nil {
		return nil, err
	}
	return m, nil
}

func statusClass(status int) string {
	if status == 499 {
		return "499"
	}
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}
