package breaker

import (
	"sync/atomic"
	"time"
)

// Clock tells a Breaker the time. Implementations must be safe for
// concurrent use.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real clock (time.Now).
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that moves only when told to, for tests.
// The zero value reads the zero time. It is safe for concurrent use;
// reading it takes no lock.
type ManualClock struct {
	t atomic.Pointer[time.Time] // nil reads as the zero time
}

// NewManualClock returns a ManualClock reading t.
func NewManualClock(t time.Time) *ManualClock {
	c := &ManualClock{}
	c.Set(t)
	return c
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	if p := c.t.Load(); p != nil {
		return *p
	}
	return time.Time{}
}

// Advance moves the clock forward by d (backward if d is negative) and
// returns the new time.
func (c *ManualClock) Advance(d time.Duration) time.Time {
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
func (c *ManualClock) Set(t time.Time) {
	c.t.Store(&t)
}
