// Package clock is the one time source of ragfuse: breakers, cooldowns,
// rate limits, caches and the test server's schedules read the time
// through a Clock, so that tests move time by hand instead of sleeping.
//
// Only the decisions that depend on the time read a Clock; timeouts of
// calls in flight run on real time (context deadlines).
package clock

import (
	"sync/atomic"
	"time"
)

// Clock tells the time. Implementations must be safe for concurrent use.
type Clock interface {
	Now() time.Time
}

// System is the real clock (time.Now). Code that reads the time on a hot
// path may compare its Clock with System and call time.Now directly.
var System Clock = system{}

type system struct{}

func (system) Now() time.Time { return time.Now() }

// Manual is a Clock that moves only when told to, for tests. The zero
// value reads the zero time. It is safe for concurrent use; reading it
// takes no lock.
type Manual struct {
	t atomic.Pointer[time.Time] // nil reads as the zero time
}

// NewManual returns a Manual clock reading t.
func NewManual(t time.Time) *Manual {
	c := &Manual{}
	c.Set(t)
	return c
}

// Now returns the clock's current time.
func (c *Manual) Now() time.Time {
	if p := c.t.Load(); p != nil {
		return *p
	}
	return time.Time{}
}

// Advance moves the clock forward by d (backward if d is negative) and
// returns the new time.
func (c *Manual) Advance(d time.Duration) time.Time {
	for {
		old := c.t.Load()
		var t time.Time
		if old != nil {
			t = *old
		}
		t = t.Add(d)
		if c.t.CompareAndSwap(old, &t) {
			return t
		}
	}
}

// Set moves the clock to t.
func (c *Manual) Set(t time.Time) {
	c.t.Store(&t)
}
