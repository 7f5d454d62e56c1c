package breaker

import (
	"math"
	"time"

	"github.com/ragfuse/ragfuse/clock"
)

// Limits applied to Config so that bad input cannot exhaust memory.
const (
	// MaxWindow is the largest count-based window; larger values are cut to it.
	MaxWindow = 1 << 16
	// MaxWindowBuckets is the most buckets a time-based window may have.
	MaxWindowBuckets = 1 << 12
)

// Config configures a Breaker. The zero value of every field means its
// documented default, so Config{} is a usable configuration. Out-of-range
// values are corrected (see each field), never rejected with a panic.
type Config struct {
	// FailureThreshold is the number of consecutive failures that trips the
	// breaker. 0 means 2; a negative value disables this rule.
	FailureThreshold int

	// Window is the size of the count-based sliding window: the rates are
	// judged over the last Window outcomes. 0 means 20; values above
	// MaxWindow are cut to it. Ignored when WindowDuration > 0.
	Window int

	// WindowDuration, if positive, selects a time-based window of this length
	// instead of the count-based one.
	WindowDuration time.Duration

	// WindowBuckets is the number of buckets the time-based window is cut
	// into; a whole bucket expires at once. 0 means 10; at most
	// MaxWindowBuckets, and at most one bucket per nanosecond.
	WindowBuckets int

	// MinimumCalls is the number of outcomes the window must hold before the
	// rates are judged. 0 means 10. With a count-based window it is cut to
	// Window, so that the rates can always be judged.
	MinimumCalls int

	// FailureRate trips the breaker when failures/calls >= FailureRate in the
	// window. 0 means 0.5; a negative value disables this rule.
	FailureRate float64

	// SlowCallDuration marks a successful call that took at least this long
	// as slow. 0 means slow calls are not tracked.
	SlowCallDuration time.Duration

	// SlowCallRate trips the breaker when slow/calls >= SlowCallRate in the
	// window. 0 means 1.0; a negative value disables this rule. It matters
	// only when SlowCallDuration > 0.
	SlowCallRate float64

	// OpenDuration is how long the breaker stays open after a trip before it
	// lets probes through. 0 means 30s.
	OpenDuration time.Duration

	// OpenBackoff, if > 1, multiplies the open duration after each failed
	// probe, up to MaxOpenDuration. With a Store, the failed probes of other
	// instances count too (see Breaker.Apply). The duration goes back to
	// OpenDuration when the breaker closes. 0 or 1 means no growth.
	OpenBackoff float64

	// MaxOpenDuration caps the growth of the open duration. 0 means
	// 10*OpenDuration; values below OpenDuration mean OpenDuration.
	MaxOpenDuration time.Duration

	// HalfOpenMaxCalls is the number of probes admitted at once while
	// half-open. 0 means 1.
	HalfOpenMaxCalls int

	// SuccessThreshold is the number of successful probes that closes the
	// breaker. 0 means 1.
	SuccessThreshold int

	// ProbeTimeout voids a probe permit that has not reported within it: its
	// slot is freed and its late report is ignored. It is also the length of
	// the Store's probe lease; a probe admitted under a lease taken earlier
	// is void when the lease ends, if that is sooner. 0 means OpenDuration,
	// but at least one second.
	ProbeTimeout time.Duration

	// ActiveProbes, if true, leaves the half-open probes to a prober that
	// asks for them with AllowProbe: Allow refuses every call while
	// HALF_OPEN, with ErrProbing, so that no caller's call is used to
	// test recovery.
	ActiveProbes bool

	// Clock tells the time. nil means clock.System.
	Clock clock.Clock

	// Store shares state with other processes. nil keeps the state in this
	// process only.
	Store Store

	// OnStateChange, if set, is called after each state change, with no lock
	// held, in the order of the changes. It may run on the goroutine of
	// another caller of the same breaker that is already delivering changes.
	OnStateChange func(name string, from, to State)
}

// WithDefaults returns c as a Breaker made with it runs: every zero or
// out-of-range field replaced by its default.
func (c Config) WithDefaults() Config {
	if c.FailureThreshold == 0 {
		c.FailureThreshold = 2
	}
	if c.Window <= 0 {
		c.Window = 20
	}
	c.Window = min(c.Window, MaxWindow)
	c.WindowDuration = max(c.WindowDuration, 0)
	if c.WindowBuckets <= 0 {
		c.WindowBuckets = 10
	}
	c.WindowBuckets = min(c.WindowBuckets, MaxWindowBuckets)
	if c.WindowDuration > 0 && int64(c.WindowDuration) < int64(c.WindowBuckets) {
		c.WindowBuckets = int(c.WindowDuration)
	}
	if c.MinimumCalls <= 0 {
		c.MinimumCalls = 10
	}
	if c.WindowDuration == 0 {
		c.MinimumCalls = min(c.MinimumCalls, c.Window)
	}
	c.FailureRate = rate(c.FailureRate, 0.5)
	c.SlowCallRate = rate(c.SlowCallRate, 1.0)
	c.SlowCallDuration = max(c.SlowCallDuration, 0)
	if c.OpenDuration <= 0 {
		c.OpenDuration = 30 * time.Second
	}
	if !(c.OpenBackoff > 1) {
		c.OpenBackoff = 1
	}
	if c.MaxOpenDuration == 0 {
		c.MaxOpenDuration = scale(c.OpenDuration, 10, math.MaxInt64)
	}
	c.MaxOpenDuration = max(c.MaxOpenDuration, c.OpenDuration)
	if c.HalfOpenMaxCalls <= 0 {
		c.HalfOpenMaxCalls = 1
	}
	if c.SuccessThreshold <= 0 {
		c.SuccessThreshold = 1
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = max(c.OpenDuration, time.Second)
	}
	if c.Clock == nil {
		c.Clock = clock.System
	}
	return c
}

// rate returns r with 0 (or NaN) replaced by def and negatives by -1.
func rate(r, def float64) float64 {
	switch {
	case r == 0 || math.IsNaN(r):
		return def
	case r < 0:
		return -1
	}
	return r
}

// scale returns d*f, no larger than limit.
func scale(d time.Duration, f float64, limit time.Duration) time.Duration {
	x := float64(d) * f
	if !(x < float64(limit)) {
		return limit
	}
	return time.Duration(x)
}

// tracksSlow reports whether slow calls are measured.
func (c *Config) tracksSlow() bool { return c.SlowCallDuration > 0 && c.SlowCallRate > 0 }

// judgesRates reports whether either rate rule is enabled.
func (c *Config) judgesRates() bool { return c.FailureRate > 0 || c.tracksSlow() }

// Exceeded reports whether a window holding calls outcomes, of which
// failures failed and slow were slow successes, crosses the rate thresholds
// of c (MinimumCalls, FailureRate, SlowCallRate). c should be an effective
// configuration as returned by Breaker.Config. Stores use it to judge
// aggregated counts with the same rule as the breaker.
func (c Config) Exceeded(calls, failures, slow int) bool {
	if calls <= 0 || calls < c.MinimumCalls {
		return false
	}
	if c.FailureRate > 0 && float64(failures)/float64(calls) >= c.FailureRate {
		return true
	}
	return c.tracksSlow() && float64(slow)/float64(calls) >= c.SlowCallRate
}
