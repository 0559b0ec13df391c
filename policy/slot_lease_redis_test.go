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

// Item 11: a crashed instance's max_parallel slots come back within a
// minute. The default lease is at most a minute, and a request that runs
// for several leases (a long stream) keeps its slot because it renews it;
// once its instance dies (its Redis connection gone, as a kill -9 leaves
// it) the slot returns within one lease. Shown with a 2 s lease so the
// test runs for seconds; the default only changes the length.
func TestSlotOfACrashedInstanceReturnsWithinALease(t *testing.T) {
	if DefaultSlotLease > time.Minute {
		t.Errorf("DefaultSlotLease %v: a crashed instance's slots would stay taken past a minute", DefaultSlotLease)
	}
	if rl := NewRateLimits(nil, 0, nil, nil); rl.lease != DefaultSlotLease {
		t.Errorf("lease %v with none configured, want %v", rl.lease, DefaultSlotLease)
	}
	u := os.Getenv("MODELGATE_TEST_REDIS")
	if u == "" {
		t.Skip("MODELGATE_TEST_REDIS unset: run `eval export $(scripts/redis.sh | tail -n1)` to test the Redis counter")
	}
	const lease = 2 * time.Second
	ra, err := ratecount.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := ratecount.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rb.Close)
	a := NewRateLimits(ra, lease, nil, func(error) {}) // it will fail: it "crashes"
	b := NewRateLimits(rb, lease, nil, func(err error) { t.Error(err) })
	t.Cleanup(b.Flush)
	id := &Identity{KeyID: "slot" + strconv.FormatInt(time.Now().UnixNano(), 36), Limits: ledger.Limits{MaxParallel: 1}}
	admit := func(rl *RateLimits) *RateHold { return admitSlot(rl, id) }
	if admit(a) == nil {
		t.Fatal("a refused with the slot free")
	}
	// A long stream on a: three leases, its slot renewed throughout.
	for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if hold := admit(b); hold != nil {
			hold.Release(0)
			t.Fatal("b took the slot of a request still running on a: its lease was not renewed")
		}
	}
	// a crashes: nothing renews or releases its slot any more.
	ra.Close()
	crashed := time.Now()
	for {
		if hold := admit(b); hold != nil {
			hold.Release(0)
			break
		}
		if time.Since(crashed) > lease+time.Second {
			t.Fatalf("b still refused %v after a crashed, with a %v lease", time.Since(crashed), lease)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the slot came back %v after the crash", time.Since(crashed).Round(time.Millisecond))
}
