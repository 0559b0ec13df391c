// Package testclock is a settable time source for tests of windows,
// leases and cooldowns, safe for the goroutines a test starts.
package testclock

import (
	"sync"
	"time"
)

// Clock reads the time it was set to until a test moves it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New is a clock at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time; pass c.Now where a time source is taken.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
