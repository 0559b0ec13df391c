package caddymodule

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/modelgate/modelgate/handlers"
	"github.com/modelgate/modelgate/ledger"
)

// observer turns gateway events into log lines and metrics. Log fields are
// ids, aliases and statuses only: never keys, prompts or URLs.
type observer struct {
	logger  *zap.Logger
	metrics *metrics
}

func (o *observer) Attempt(a handlers.Attempt) {
	outcome := "ok"
	level := zapcore.DebugLevel
	switch {
	case a.Err != "":
		outcome, level = a.Err, zapcore.WarnLevel
	case a.Status >= 300:
		outcome, level = statusClass(a.Status), zapcore.WarnLevel
	}
	o.metrics.attempts.WithLabelValues(a.Alias, a.Provider, outcome).Inc()
	if c := o.logger.Check(level, "upstream attempt"); c != nil {
		c.Write(zap.String("alias", a.Alias), zap.String("deployment", a.Deployment), zap.String("provider", a.Provider),
			zap.String("upstream_model", a.Upstream), zap.Int("status", a.Status), zap.String("error", a.Err),
			zap.Bool("retrying", a.Retrying), zap.Duration("duration", a.Duration))
	}
}

func (o *observer) Done(rec *ledger.Record) {
	m := o.metrics
	m.requests.WithLabelValues(rec.Alias, string(rec.Endpoint), rec.Provider, statusClass(rec.Status)).Inc()
	if rec.Provider != "" {
		m.latency.WithLabelValues(rec.Alias, rec.Provider).Observe(rec.Latency.Seconds())
	}
	if rec.TTFT > 0 {
		m.ttft.WithLabelValues(rec.Alias).Observe(rec.TTFT.Seconds())
	}
	add := func(typ string, n int64) {
		if n > 0 {
			m.tokens.WithLabelValues(rec.Alias, typ).Add(float64(n))
		}
	}
	add("input", rec.InputTokens)
	add("cache_read", rec.CacheReadTokens)
	add("cache_creation", rec.CacheCreation5m+rec.CacheCreation1h)
	add("output", rec.OutputTokens)
	if c := o.logger.Check(zapcore.DebugLevel, "request done"); c != nil {
		c.Write(zap.String("key_id", rec.KeyID), zap.String("alias", rec.Alias), zap.Int("status", rec.Status),
			zap.String("outcome", string(rec.Outcome)), zap.Int64("input_tokens", rec.InputTokens), zap.Int64("output_tokens", rec.OutputTokens),
			zap.Duration("latency", rec.Latency))
	}
}
