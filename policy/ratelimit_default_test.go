package policy

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/ratecount"
)

// TestDefaultParallelIsMaxParallel: the gateway-wide default (the folded
// max_concurrent_per_key) is a max_parallel of every key that sets none:
// counted per key, refused as max_parallel is (429, Retry-After: 1), and
// with a shared counter shared between instances; a key's own
// max_parallel wins over it.
func TestDefaultParallelIsMaxParallel(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, a, b *RateLimits) {
		stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
		plain := &Identity{KeyID: "plain" + stamp}
		own := &Identity{KeyID: "own" + stamp, Limits: ledger.Limits{MaxParallel: 2}}
		first, _, refusal := a.AdmitWithDefault(ctx, plain, ledger.Limits{}, 0, 1)
		if refusal != nil || first == nil {
			t.Fatalf("first request of a key refused: %v", refusal)
		}
		if _, _, refusal := b.AdmitWithDefault(ctx, plain, ledger.Limits{}, 0, 1); refusal == nil || refusal.Status != 429 || refusal.RetryAfter != "1" {
			t.Fatalf("second request in progress: %+v", refusal)
		}
		for range 2 {
			hold, _, refusal := b.AdmitWithDefault(ctx, own, ledger.Limits{}, 0, 1)
			if refusal != nil {
				t.Fatalf("a key's own max_parallel of 2 lost to the default of 1: %v", refusal)
			}
			defer hold.Release(0)
		}
		first.Release(0)
		if hold, _, refusal := b.AdmitWithDefault(ctx, plain, ledger.Limits{}, 0, 1); refusal != nil {
			t.Fatalf("after the first ended: %v", refusal)
		} else {
			hold.Release(0)
		}
		if _, _, refusal := a.AdmitWithDefault(ctx, plain, ledger.Limits{}, 0, 0); refusal != nil {
			t.Fatalf("no default, no limit: %v", refusal)
		}
	}
	t.Run("one instance", func(t *testing.T) {
		rl := NewRateLimits(nil, 0, nil, nil)
		check(t, rl, rl)
	})
	t.Run("two instances on redis", func(t *testing.T) {
		u := os.Getenv("MODELGATE_TEST_REDIS")
		if u == "" {
			t.Skip("MODELGATE_TEST_REDIS unset: run `eval export $(scripts/redis.sh | tail -n1)` to test the Redis counter")
		}
		var rls []*RateLimits
		for range 2 {
			rc, err := ratecount.Open(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rc.Close)
			rl := NewRateLimits(rc, 0, nil, func(err error) { t.Error(err) })
			t.Cleanup(rl.Flush)
			rls = append(rls, rl)
		}
		check(t, rls[0], rls[1])
	})
}
