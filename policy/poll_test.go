package policy

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestPollRefreshesReportsAndStops: the first refresh is at once, a
// failure is reported, and poll returns when its context ends.
func TestPollRefreshesReportsAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls, failures atomic.Int32
	boom := errors.New("boom")
	done := make(chan struct{})
	go func() {
		defer close(done)
		poll(ctx, time.Millisecond, func(rctx context.Context) error {
			if _, ok := rctx.Deadline(); !ok {
				t.Error("refresh called without a deadline")
			}
			if calls.Add(1)%2 == 0 {
				return boom
			}
			return nil
		}, func(err error) {
			if !errors.Is(err, boom) {
				t.Errorf("reported %v", err)
			}
			failures.Add(1)
		})
	}()
	for deadline := time.Now().Add(10 * time.Second); failures.Load() < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %d calls, %d failures reported", calls.Load(), failures.Load())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("poll did not return after its context ended")
	}
}
