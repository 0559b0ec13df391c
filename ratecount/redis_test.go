package ratecount

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func testRedis(t *testing.T) *Redis {
	t.Helper()
	u := os.Getenv("MODELGATE_TEST_REDIS")
	if u == "" {
		t.Skip("MODELGATE_TEST_REDIS unset: run `eval export $(scripts/redis.sh | tail -n1)` to test the Redis counter")
	}
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
