package policy

import (
	"context"
	"time"
)

// poll calls refresh at once and then every interval until ctx ends, each
// call bounded at 5 s, and reports to failed (which may be nil) the errors
// of calls that ctx's end did not cause.
func poll(ctx context.Context, every time.Duration, refresh func(context.Context) error, failed func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := refresh(rctx)
		cancel()
		if err != nil && ctx.Err() == nil && failed != nil {
			failed(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
