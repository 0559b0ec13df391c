package ratecount

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// TestRedisReleaseAndSettle: the slot comes back and the window settles
// to the real count in one step; a retry counts once, and a window that
// is gone stays gone while the slot is still given back.
func TestRedisReleaseAndSettle(t *testing.T) {
	r := testRedis(t)
	ctx := context.Background()
	scope := "end:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	window := time.Now().Unix() / 60 * 60
	if ok, err := r.Acquire(ctx, scope, "a", 1, time.Minute); err != nil || !ok {
		t.Fatalf("slot: %v %v", ok, err)
	}
	if _, _, took, err := r.Take(ctx, scope, window, 0, 1000, 600); err != nil || !took {
		t.Fatalf("take: %v %v", took, err)
	}
	for range 2 { // the second is a retry whose first answer was lost
		if err := r.ReleaseAndSettle(ctx, scope, "a", window, -500); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := r.Acquire(ctx, scope, "b", 1, time.Minute); !ok {
		t.Error("slot not given back")
	}
	// 100 settled tokens: 900 more fit, 901 do not.
	if _, toks, took, err := r.Take(ctx, scope, window, 0, 1000, 901); err != nil || took || toks != 100 {
		t.Errorf("after settling: took %v, tokens %d, %v; want refused at 100", took, toks, err)
	}
	if _, _, took, _ := r.Take(ctx, scope, window, 0, 1000, 900); !took {
		t.Error("900 tokens refused with 100 of 1000 used")
	}
	gone := window - 3600
	if err := r.ReleaseAndSettle(ctx, scope, "b", gone, 50); err != nil {
		t.Fatal(err)
	}
	if n, err := r.do(ctx, "EXISTS", windowKey(scope, gone)); err != nil || n.(int64) != 0 {
		t.Errorf("a gone window was created again: %v %v", n, err)
	}
	if ok, _ := r.Acquire(ctx, scope, "c", 1, time.Minute); !ok {
		t.Error("slot b not given back with a gone window")
	}
}

// TestRedisCountOutlivesACanceledRequest: a request whose client left
// (its context canceled) still gets its count, not an error that would
// read as Redis failing.
func TestRedisCountOutlivesACanceledRequest(t *testing.T) {
	r := testRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	scope := "cancel:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, _, took, err := r.Take(ctx, scope, time.Now().Unix()/60*60, 5, 0, 0); err != nil || !took {
		t.Fatalf("take on a canceled context: %v %v", took, err)
	}
	if ok, err := r.Acquire(ctx, scope, "a", 1, time.Minute); err != nil || !ok {
		t.Fatalf("acquire on a canceled context: %v %v", ok, err)
	}
}
