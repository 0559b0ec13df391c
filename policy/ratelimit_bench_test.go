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

// BenchmarkRateAdmitRelease: one request's admission and release against
// a key with rpm, tpm and max_parallel, counted per process and in Redis.
func BenchmarkRateAdmitRelease(b *testing.B) {
	id := &Identity{KeyID: "bench", Limits: ledger.Limits{RPM: 1 << 40, TPM: 1 << 50, MaxParallel: 1 << 20}}
	run := func(b *testing.B, rl *RateLimits) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			hold, _, refusal := rl.Admit(ctx, id, ledger.Limits{}, 1000)
			if refusal != nil {
				b.Fatal(refusal)
			}
			hold.Release(100)
		}
	}
	b.Run("local", func(b *testing.B) { run(b, NewRateLimits(nil, 0, nil, nil)) })
	b.Run("redis", func(b *testing.B) {
		u := os.Getenv("MODELGATE_TEST_REDIS")
		if u == "" {
			b.Skip("MODELGATE_TEST_REDIS unset")
		}
		r, err := ratecount.Open(context.Background(), u)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		id := *id
		id.KeyID = "bench" + strconv.FormatInt(time.Now().UnixNano(), 36)
		rl := NewRateLimits(r, 0, nil, func(err error) { b.Fatal(err) })
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			hold, _, refusal := rl.Admit(ctx, &id, ledger.Limits{}, 1000)
			if refusal != nil {
				b.Fatal(refusal)
			}
			hold.Release(100)
		}
	})
}
