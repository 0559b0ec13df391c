package testwait

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestUntilReturnsOnceTheConditionHolds: Until polls until the condition
// holds and reports true, long before its bound.
func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int64
	go func() {
		for range 3 {
			time.Sleep(time.Millisecond)
			n.Add(1)
		}
	}()
	start := time.Now()
	if !Until(func() bool { return n.Load() == 3 }) {
		t.Fatalf("Until gave up at n=%d", n.Load())
	}
	if d := time.Since(start); d > Bound/2 {
		t.Errorf("Until took %s for a condition that held within milliseconds", d)
	}
}

// TestReceiveReturnsTheValuesInOrder: Receive waits for exactly n values.
func TestReceiveReturnsTheValuesInOrder(t *testing.T) {
	ch := make(chan string, 3)
	go func() {
		for _, v := range []string{"a", "b", "c"} {
			ch <- v
		}
	}()
	got := Receive(t, "three values", ch, 2)
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("Receive gave %q, want [a b]", got)
	}
	if v := <-ch; v != "c" {
		t.Errorf("the third value %q was consumed", v)
	}
}
