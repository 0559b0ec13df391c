// Package testwait lets a test wait for a condition instead of sleeping
// for a guess: it polls briefly until the condition holds, up to a bound
// after which the test fails. A test is then
// as fast as the machine allows and slow machines do not make it flaky.
package testwait

import (
	"testing"
	"time"
)

// Bound is how long Until and Receive wait: long enough for a loaded 2-core machine,
// short enough that a condition that never comes fails the test quickly.
const Bound = 10 * time.Second

// Until polls cond every few milliseconds until it holds or Bound has
// passed, and reports whether it held; the test then asserts as it would
// have after a sleep, with its own message.
func Until(cond func() bool) bool {
	deadline := time.Now().Add(Bound)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// Receive waits for n values on ch and returns them; after Bound it fails
// t with "still not <what>".
func Receive[T any](t testing.TB, what string, ch <-chan T, n int) []T {
	t.Helper()
	got := make([]T, 0, n)
	deadline := time.After(Bound)
	for len(got) < n {
		select {
		case v := <-ch:
			got = append(got, v)
		case <-deadline:
			t.Fatalf("still not %s after %s (%d of %d)", what, Bound, len(got), n)
		}
	}
	return got
}
