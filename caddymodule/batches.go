package caddymodule

import (
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/dustin/go-humanize"
	"go.uber.org/zap"

	"github.com/modelgate/modelgate/batch"
)

// BatchConfig sets the batch APIs (Anthropic Message Batches, OpenAI
// Files and Batch), which the gateway serves and runs itself on every
// backend (docs/batches.md).
type BatchConfig struct {
	// Retention is how long a batch's results, and an uploaded file, are
	// kept. Default 29 days (Anthropic's).
	Retention caddy.Duration `json:"retention,omitempty"`
	// Workers is how many items each instance runs at once. Default 2.
	Workers int `json:"workers,omitempty"`
	// MaxBytes bounds an uploaded file and a Message Batches create body.
	// Default 100 MB.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxItems bounds the requests of one batch. Default 50,000.
	MaxItems int `json:"max_items,omitempty"`
	// ProviderPrice is the fraction of the list price a batch passed
	// through to a provider's batch API costs. Default 0.5.
	ProviderPrice float64 `json:"provider_price,omitempty"`
}

// batchOptions are the batch service's options of this app.
func (a *App) batchOptions(logger *zap.Logger) batch.Options {
	o := batch.Options{Failed: func(what string, err error) { logger.Warn(what, zap.Error(err)) }}
	if c := a.Batches; c != nil {
		o.Retention, o.Workers, o.MaxBytes, o.MaxItems = time.Duration(c.Retention), c.Workers, c.MaxBytes, c.MaxItems
		o.ProviderPrice = c.ProviderPrice
	}
	return o
}

// parseBatches reads `batches { retention 29d  workers 2  max_bytes 100MB  max_items 50000  provider_price 0.5 }`.
func (a *App) parseBatches(d *caddyfile.Dispenser) error {
	if a.Batches != nil {
		return d.Err("batches already specified")
	}
	a.Batches = &BatchConfig{}
	for inner := d.Nesting(); d.NextBlock(inner); {
		opt := d.Val()
		var v string
		if !d.AllArgs(&v) {
			return d.Errf("batches %s: want one value", opt)
		}
		switch opt {
		case "retention":
			dur, err := caddy.ParseDuration(v)
			if err != nil || dur < time.Hour {
				return d.Errf("batches retention: %q is not a duration of at least 1h (e.g. 29d)", v)
			}
			a.Batches.Retention = caddy.Duration(dur)
		case "workers":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 256 {
				return d.Errf("batches workers: want a whole number from 1 to 256, got %q", v)
			}
			a.Batches.Workers = n
		case "max_bytes":
			n, err := humanize.ParseBytes(v)
			if err != nil || n < 1024 || n > 1<<30 {
				return d.Errf("batches max_bytes: want a size from 1KB to 1GB (e.g. 100MB), got %q", v)
			}
			a.Batches.MaxBytes = int64(n)
		case "max_items":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000000 {
				return d.Errf("batches max_items: want a whole number from 1 to 1000000, got %q", v)
			}
			a.Batches.MaxItems = n
		case "provider_price":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0 && f <= 1) {
				return d.Errf("batches provider_price: want the fraction of the list price a provider's batch costs, above 0 and at most 1 (0.5: half), got %q", v)
			}
			a.Batches.ProviderPrice = f
		default:
			return d.Errf("batches: unknown option %q; want retention, workers, max_bytes, max_items or provider_price", opt)
		}
	}
	return nil
}
