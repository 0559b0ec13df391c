package ratecount

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testlane"
)

func testRedis(t *testing.T) *Redis {
	t.Helper()
	u := testlane.RedisURL(t)
	r, err := Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// TestRedisCounter: windows, tokens and slots against a real Redis, and
// the count holds under concurrent takers (the scripts are atomic).
func TestRedisCounter(t *testing.T) {
	r := testRedis(t)
	ctx := context.Background()
	scope := "test:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	window := time.Now().Unix() / 60 * 60

	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, took, err := r.Take(ctx, scope, window, 10, 0, 0); err != nil {
				t.Error(err)
			} else if took {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 10 {
		t.Errorf("%d of 40 concurrent takes passed an rpm of 10", ok.Load())
	}
	if _, _, took, err := r.Take(ctx, scope+"t", window, 0, 500, 100); err != nil || !took {
		t.Fatalf("first take: %v %v", took, err)
	}
	if err := r.AddTokens(ctx, scope+"t", window, 400, "a"); err != nil {
		t.Fatal(err)
	}
	if _, toks, took, err := r.Take(ctx, scope+"t", window, 0, 500, 1); err != nil || took || toks != 500 {
		t.Errorf("tpm reached: took %v, tokens %d, %v", took, toks, err)
	}
	if a, _ := r.Acquire(ctx, scope, "a", 1, time.Minute); !a {
		t.Fatal("first slot refused")
	}
	if a, _ := r.Acquire(ctx, scope, "b", 1, time.Minute); a {
		t.Error("second slot of one given")
	}
	if err := r.Release(ctx, scope, "a"); err != nil {
		t.Fatal(err)
	}
	if a, _ := r.Acquire(ctx, scope, "b", 1, time.Minute); !a {
		t.Error("slot not given back")
	}
	// A server that forgot the scripts (restart, SCRIPT FLUSH) gets them again.
	if _, err := r.do(ctx, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.Take(ctx, scope+"f", window, 5, 0, 0); err != nil {
		t.Errorf("after SCRIPT FLUSH: %v", err)
	}
}

func TestOpenRefusesBadURLsWithoutEchoingThem(t *testing.T) {
	for _, u := range []string{"http://x", "redis://", "redis://:s3cret@host:6379/notanumber", "rediss://h:1"} {
		_, err := Open(context.Background(), u)
		if err == nil {
			t.Errorf("%s accepted", u)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error echoes the password: %v", err)
		}
	}
	if _, err := Open(context.Background(), "redis://127.0.0.1:1/0"); err == nil {
		t.Error("a closed port accepted")
	}
}

// TestRedisTPMReservations: concurrent takes reserve their estimates, so
// 30 requests of 5000 tokens pass a tpm of 10000 two at a time; a
// settlement counts once however often it is retried, never takes the
// count below zero, and leaves a window that is gone alone.
func TestRedisTPMReservations(t *testing.T) {
	r := testRedis(t)
	ctx := context.Background()
	scope := "test:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	window := time.Now().Unix() / 60 * 60
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, took, err := r.Take(ctx, scope, window, 0, 10000, 5000); err != nil {
				t.Error(err)
			} else if took {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 2 {
		t.Fatalf("%d of 30 concurrent reservations of 5000 passed a tpm of 10000", ok.Load())
	}
	for i := 0; i < 3; i++ { // one settlement, retried
		if err := r.AddTokens(ctx, scope, window, -4900, "req1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, toks, took, _ := r.Take(ctx, scope, window, 0, 10000, 4900); !took || toks != 10000 {
		t.Errorf("after one settlement of -4900: took %v, tokens %d", took, toks)
	}
	if err := r.AddTokens(ctx, scope, window, -50000, "req2"); err != nil {
		t.Fatal(err)
	}
	if _, toks, _, _ := r.Take(ctx, scope, window, 0, 10000, 0); toks != 0 {
		t.Errorf("a settlement past zero left %d tokens", toks)
	}
	gone := scope + "gone"
	if err := r.AddTokens(ctx, gone, window, 300, "req3"); err != nil {
		t.Fatal(err)
	}
	if n, _ := r.do(ctx, "EXISTS", windowKey(gone, window)); n != int64(0) {
		t.Error("settling a window that is gone made it again")
	}
}

// TestRedisLeasesExpireWhileTheKeyStaysBusy: leases whose holder is gone
// (no release, no renewal) lapse on time even though other requests keep
// acquiring and releasing slots of the same scope; a renewed lease does
// not; releasing twice releases once.
func TestRedisLeasesExpireWhileTheKeyStaysBusy(t *testing.T) {
	r := testRedis(t)
	ctx := context.Background()
	scope := "test:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	const lease = 600 * time.Millisecond
	for _, l := range []string{"dead1", "dead2", "renewed"} {
		if a, err := r.Acquire(ctx, scope, l, 4, lease); err != nil || !a {
			t.Fatalf("%s: %v %v", l, a, err)
		}
	}
	// The key stays busy past the dead leases' deadline.
	end := time.Now().Add(3 * lease)
	for time.Now().Before(end) {
		if err := r.Renew(ctx, scope, "renewed", lease); err != nil {
			t.Fatal(err)
		}
		if a, err := r.Acquire(ctx, scope, "busy", 4, time.Minute); err != nil || !a {
			t.Fatalf("busy: %v %v", a, err)
		}
		for i := 0; i < 2; i++ {
			if err := r.Release(ctx, scope, "busy"); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(lease / 8)
	}
	for i, l := range []string{"a", "b", "c"} {
		if a, _ := r.Acquire(ctx, scope, l, 4, time.Minute); !a {
			t.Fatalf("slot %d after the dead leases lapsed refused", i)
		}
	}
	if a, _ := r.Acquire(ctx, scope, "d", 4, time.Minute); a {
		t.Error("the renewed lease lapsed: a fifth slot of four")
	}
	if ttl, _ := r.do(ctx, "PTTL", leaseKey(scope)); ttl.(int64) <= 0 || ttl.(int64) > time.Minute.Milliseconds() {
		t.Errorf("lease set expires in %v ms, want within the longest lease", ttl)
	}
}

// TestRedisRenewAfterReleaseHoldsNothing: a renewal that reaches Redis
// after its request's release (the renewal timer fired as the request
// ended) does not take the slot back.
func TestRedisRenewAfterReleaseHoldsNothing(t *testing.T) {
	r := testRedis(t)
	ctx := context.Background()
	scope := "test:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if a, err := r.Acquire(ctx, scope, "only", 1, time.Minute); err != nil || !a {
		t.Fatalf("acquire: %v %v", a, err)
	}
	if err := r.Release(ctx, scope, "only"); err != nil {
		t.Fatal(err)
	}
	if err := r.Renew(ctx, scope, "only", time.Minute); err != nil {
		t.Fatal(err)
	}
	if a, err := r.Acquire(ctx, scope, "next", 1, time.Minute); err != nil || !a {
		t.Fatalf("the one slot after a release and a late renewal: %v %v; want free", a, err)
	}
}
