package policy

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testlane"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/ratecount"
)

// TestRedisReleaseSettlesInOneStep: a request holding a slot and a tpm
// reservation in Redis gives both back when it ends (in one round trip),
// so the next request gets the slot and sees the real token count.
func TestRedisReleaseSettlesInOneStep(t *testing.T) {
	u := testlane.RedisURL(t)
	r, err := ratecount.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	rl := NewRateLimits(r, 0, nil, func(err error) { t.Error(err) })
	t.Cleanup(rl.Flush) // before r.Close: slots an instance holds go back
	id := &Identity{KeyID: "end" + strconv.FormatInt(time.Now().UnixNano(), 36), Limits: ledger.Limits{TPM: 1000, MaxParallel: 1}}
	ctx := context.Background()
	hold, _, refusal := rl.Admit(ctx, id, ledger.Limits{}, 900)
	if refusal != nil {
		t.Fatal(refusal.Message)
	}
	if _, _, refusal := rl.Admit(ctx, id, ledger.Limits{}, 10); refusal == nil {
		t.Fatal("a second request got the only slot")
	}
	hold.Release(100)
	// The slot is back and 100 of the 900 reserved tokens count: 900 fit.
	hold, _, refusal = rl.Admit(ctx, id, ledger.Limits{}, 900)
	if refusal != nil {
		t.Fatalf("after the release: %s", refusal.Message)
	}
	hold.Release(900)
	if n := rl.Retrying.Load(); n != 0 {
		t.Errorf("%d operations left to retry", n)
	}
}
