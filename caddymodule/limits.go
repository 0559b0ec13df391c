package caddymodule

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/modelgate/modelgate/handlers"
	"github.com/modelgate/modelgate/ratecount"
)

// LimitsBackend names where rate limits are counted.
type LimitsBackend struct {
	// Driver is "redis" or "local".
	Driver string `json:"driver,omitempty"`
	// URL is the Redis URL; placeholders such as {env.REDIS_URL} are
	// expanded.
	URL string `json:"url,omitempty"`
}

// provisionRates sets up where rate limits are counted: in this process,
// or shared through Redis (`limits redis <url>`).
func (a *App) provisionRates() error {
	logger := a.logger
	warn := func(err error) {
		logger.Warn("the shared rate-limit counter failed; limiting per process until it answers", zap.Error(err))
	}
	if a.Limits == nil || a.Limits.Driver == "local" || a.Limits.Driver == "" {
		a.rates = handlers.NewRateLimits(nil, nil, warn)
		return nil
	}
	if a.Limits.Driver != "redis" {
		return fmt.Errorf("limits: unknown store %q; use redis or local", a.Limits.Driver)
	}
	u, err := caddy.NewReplacer().ReplaceOrErr(a.Limits.URL, true, true)
	if err != nil {
		return fmt.Errorf("limits redis: %v", err)
	}
	r, err := ratecount.New(u)
	if err != nil {
		return err
	}
	a.rates = handlers.NewRateLimits(r, nil, warn)
	return nil
}
