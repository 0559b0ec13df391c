package policy

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testlane"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/ratecount"
)

// twoInstances is two RateLimits on one Redis, as two gateways are.
func twoInstances(t *testing.T) (a, b *RateLimits) {
	t.Helper()
	u := testlane.RedisURL(t)
	var rls [2]*RateLimits
	for i := range rls {
		r, err := ratecount.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		rls[i] = NewRateLimits(r, 0, nil, func(err error) { t.Error(err) })
		t.Cleanup(rls[i].Flush)
	}
	// The counts are per minute: start early enough in one to end in it.
	if s := time.Now().Second(); s > 50 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	return rls[0], rls[1]
}

// TestChunksNeverPassALimitAcrossInstances: two instances admitting from
// chunks of one window, 40 requests at a time each, admit no more than
// the rpm between them, and never count more tokens (those settled plus
// those reserved by requests in flight) than the tpm, whatever they
// settle.
func TestChunksNeverPassALimitAcrossInstances(t *testing.T) {
	a, b := twoInstances(t)
	for _, tc := range []struct {
		name     string
		rpm, tpm int64
	}{{"rpm", 157, 1 << 40}, {"tpm", 1 << 20, 9_000}} {
		t.Run(tc.name, func(t *testing.T) {
			const reserve = 700
			id := &Identity{KeyID: "chunks" + strconv.FormatInt(time.Now().UnixNano(), 36), Limits: ledger.Limits{RPM: tc.rpm, TPM: tc.tpm}}
			var mu sync.Mutex
			var admitted, charged, peak int64
			var wg sync.WaitGroup
			for i := range 80 {
				rl := a
				if i%2 == 1 {
					rl = b
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range 4 {
						hold, _, refusal := rl.Admit(context.Background(), id, ledger.Limits{}, reserve)
						if refusal != nil {
							continue
						}
						mu.Lock()
						admitted++
						charged += reserve
						peak = max(peak, charged)
						mu.Unlock()
						time.Sleep(time.Millisecond)
						// Some use less than their reservation, some none.
						used := int64(j * 200)
						mu.Lock()
						charged += used - reserve
						mu.Unlock()
						hold.Release(used)
					}
				}()
			}
			wg.Wait()
			if admitted > tc.rpm || admitted == 0 {
				t.Errorf("%d admitted of 320 against an rpm of %d on two instances", admitted, tc.rpm)
			}
			if peak > tc.tpm {
				t.Errorf("%d tokens counted at once (settled and reserved) against a tpm of %d", peak, tc.tpm)
			}
			t.Logf("%d admitted, peak %d tokens counted", admitted, peak)
		})
	}
}

// TestIdleChunkGoesBack: what one instance took in a chunk and did not
// use goes back when it idles, so the other instance can use the window.
func TestIdleChunkGoesBack(t *testing.T) {
	a, b := twoInstances(t)
	// 21, not 20: a's chunks of 1, 2, 4, 7 and 6 (each at most an eighth
	// of what the minute has left) add up to exactly 20, leaving nothing
	// to hold.
	const rpm, burst = 64, 21
	id := &Identity{KeyID: "idle" + strconv.FormatInt(time.Now().UnixNano(), 36), Limits: ledger.Limits{RPM: rpm}}
	admit := func(rl *RateLimits) bool {
		hold, _, refusal := rl.Admit(context.Background(), id, ledger.Limits{}, 0)
		hold.Release(0)
		return refusal == nil
	}
	// A burst on a makes its chunks grow past what it uses.
	for range burst {
		if !admit(a) {
			t.Fatal("a refused within the rpm")
		}
	}
	// While a holds its unused chunk, b gets less than the rest of the
	// minute (else a held nothing and the give-back below proves nothing).
	early := 0
	for admit(b) {
		early++
	}
	if early >= rpm-burst {
		t.Fatalf("b admitted %d at once after a used %d of %d: a held no chunk", early, burst, rpm)
	}
	// b gets the rest of the minute once a's unused chunk is back.
	time.Sleep(chunkIdle + 500*time.Millisecond)
	got := early
	for admit(b) {
		got++
	}
	if got != rpm-burst {
		t.Errorf("b admitted %d after a used %d of %d and idled, want %d", got, burst, rpm, rpm-burst)
	}
}

// admitSlot admits one request of id on rl: its hold, nil when refused.
func admitSlot(rl *RateLimits, id *Identity) *RateHold {
	hold, _, refusal := rl.Admit(context.Background(), id, ledger.Limits{}, 0)
	if refusal != nil {
		return nil
	}
	return hold
}

// TestHotScopeSlotsLingerThenGoBack: a scope admitting many requests a
// second keeps its freed slots for its next request, and gives them back
// within slotLinger once no request comes, so another instance gets them.
func TestHotScopeSlotsLingerThenGoBack(t *testing.T) {
	a, b := twoInstances(t)
	id := &Identity{KeyID: "hot" + strconv.FormatInt(time.Now().UnixNano(), 36), Limits: ledger.Limits{MaxParallel: 1}}
	admit := func(rl *RateLimits) *RateHold { return admitSlot(rl, id) }
	for i := range hotAdmissions + 1 {
		hold := admit(a)
		if hold == nil {
			t.Fatalf("request %d refused on a with its one slot free", i)
		}
		hold.Release(0)
	}
	// a's one slot lingers for its next request: b finds it taken...
	if hold := admit(b); hold != nil {
		hold.Release(0)
		t.Error("b took the slot a hot scope on a had just freed")
	}
	// ...until it goes back.
	time.Sleep(slotLinger + 100*time.Millisecond)
	hold := admit(b)
	if hold == nil {
		t.Fatalf("b still refused %v after a's last request", slotLinger+100*time.Millisecond)
	}
	hold.Release(0)
}
