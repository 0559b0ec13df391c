package caddymodule

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/ratecount"
)

// LimitsBackend names where rate limits are counted.
type LimitsBackend struct {
	// Driver is "redis" or "local".
	Driver string `json:"driver,omitempty"`
	// URL is the Redis URL; placeholders such as {env.REDIS_URL} are
	// expanded.
	URL string `json:"url,omitempty"`
	// SlotLease is how long a max_parallel slot outlives the last sign of
	// its request (an instance that crashed, a release Redis never got);
	// the instance renews the slots it holds every half lease. Default: 10m,
	// the default upstream timeout.
	SlotLease caddy.Duration `json:"slot_lease,omitempty"`
}

// provisionRates sets up where rate limits are counted: in this process,
// or shared through Redis (`limits redis <url>`).
func (a *App) provisionRates() error {
	logger := a.logger
	warn := func(err error) {
		logger.Warn("the shared rate-limit counter failed; limiting per process until it answers", zap.Error(err))
	}
	var lease time.Duration
	if a.Limits != nil {
		lease = time.Duration(a.Limits.SlotLease)
	}
	if lease != 0 && lease < time.Second {
		return fmt.Errorf("limits slot_lease: %v is shorter than 1s", lease)
	}
	if a.Limits == nil || a.Limits.Driver == "local" || a.Limits.Driver == "" {
		a.rates = policy.NewRateLimits(nil, lease, nil, warn)
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
	a.rates = policy.NewRateLimits(r, lease, nil, warn)
	a.redis = r
	return nil
}
