package breaker

import (
	"sync"
	"sync/atomic"
	"time"
)

// Layout of an in-flight slot: the slice number plus one (0: never used) in
// the high bits, the number of permits in the low countBits bits.
const (
	countBits = 24
	countMask = 1<<countBits - 1
)

// Granularity of the in-flight count: SlowCallDuration is cut into
// inflightSlices slices of at least minSliceWidth, so a call still running
// is counted slow at most one slice after it crossed SlowCallDuration.
const (
	inflightSlices = 8
	minSliceWidth  = time.Millisecond
)

// inflight counts the permits of one CLOSED period that were granted and
// not yet reported, by the slice of time they started in, so that a call
// running for SlowCallDuration counts as slow before it returns. It is
// written without locks by Allow and the reports; mu is taken only to move
// head, once per slice width.
//
// Invariants: for every slice j in (head-len(slots), head], slot
// j%len(slots) holds the permits started in slice j; every permit of the
// period started before those slices and not yet reported is counted in
// slow instead. A slice leaves the ring (its permits move to slow) only
// when all of its permits have run for SlowCallDuration.
type inflight struct {
	width int64           // slice width in nanoseconds
	slots []atomic.Uint64 // label<<countBits | count
	head  atomic.Int64    // newest slice; -1 before the first
	slow  atomic.Int64    // permits in flight for SlowCallDuration or more
	mu    sync.Mutex      // serializes moving head
}

// newInflight returns an empty count for calls that turn slow after slow.
func newInflight(slow time.Duration) *inflight {
	g := max(slow/inflightSlices, minSliceWidth)
	n := int((slow+g-1)/g) + 1
	f := &inflight{width: int64(g), slots: make([]atomic.Uint64, n)}
	f.head.Store(-1)
	return f
}

// slice returns the number of the slice holding time at (an offset from
// the breaker's origin). While at falls in the head slice, as it does for
// most calls, it is known without a division.
func (f *inflight) slice(at time.Duration) int64 {
	if h := f.head.Load(); h >= 0 && int64(at)-h*f.width >= 0 && int64(at)-h*f.width < f.width {
		return h
	}
	if at < 0 {
		return 0
	}
	return int64(at) / f.width
}

// begin counts in flight a permit granted at time at. It returns the start
// to keep in the permit, which is at unless at lies behind the ring (the
// clock stepped back, or head moved since at was read): then it is the
// start of the newest slice. It also returns how many permits turned slow
// as head moved.
func (f *inflight) begin(at time.Duration) (time.Duration, int64) {
	e := f.slice(at)
	var turned int64
	n := int64(len(f.slots))
	for {
		s := &f.slots[e%n]
		v := s.Load()
		switch label := int64(v >> countBits); {
		case label == e+1:
			if s.CompareAndSwap(v, v+1) {
				return at, turned
			}
		case label < e+1:
			turned += f.advance(e)
		default: // the slot holds a newer slice: at is behind the ring
			e = f.head.Load()
			at = max(at, time.Duration(e*f.width))
		}
	}
}

// end removes from the count a permit whose start begin returned, and
// reports whether it had been counted slow.
func (f *inflight) end(start time.Duration) bool {
	e := f.slice(start)
	s := &f.slots[e%int64(len(f.slots))]
	for {
		v := s.Load()
		if int64(v>>countBits) != e+1 {
			f.slow.Add(-1) // its slice left the ring
			return true
		}
		if v&countMask == 0 {
			return false // not counted here; cannot happen for a permit of begin
		}
		if s.CompareAndSwap(v, v-1) {
			return false
		}
	}
}

// sweep moves head to the slice of time at, if that is ahead, and returns
// how many permits turned slow.
func (f *inflight) sweep(at time.Duration) int64 {
	if e := f.slice(at); e > f.head.Load() {
		return f.advance(e)
	}
	return 0
}

// advance moves head to slice e if e is ahead of it, moving the permits of
// the slices that leave the ring to slow, and returns how many it moved.
func (f *inflight) advance(e int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.head.Load()
	if e <= h {
		return 0
	}
	n := int64(len(f.slots))
	var turned int64
	for j := max(h+1, e-n+1); j <= e; j++ {
		// Slot j%n held slice j-n or older: all of its permits have run
		// for (n-1) slice widths, which is at least SlowCallDuration.
		v := f.slots[j%n].Swap(uint64(j+1) << countBits)
		turned += int64(v & countMask)
	}
	f.slow.Add(turned)
	f.head.Store(e)
	return turned
}

// slowCount returns the number of permits in flight for SlowCallDuration
// or more.
func (f *inflight) slowCount() int64 { return max(f.slow.Load(), 0) }

// inFlightReason is the Reason of a trip decided by calls still in flight.
var inFlightReason = Reason{Kind: "slow_in_flight", Message: "calls in flight for slow_call_duration"}

// grant returns a permit of CLOSED period p for a call starting at start,
// counted in flight when slow calls in flight are tracked. If calls that
// turned slow meanwhile trip the breaker, it asks again, as Allow does.
func (b *Breaker) grant(p *period, start time.Duration) (Permit, error) {
	if live := p.w.live; live != nil {
		var turned int64
		start, turned = live.begin(start)
		if turned > 0 && b.judgeInFlight(p, start) {
			return b.allowSlow(false)
		}
	}
	return Permit{b: b, p: p, start: start}, nil
}

// sweepInFlight brings the in-flight count of CLOSED period p up to time at
// and reports whether calls that turned slow tripped the breaker.
func (b *Breaker) sweepInFlight(p *period, at time.Duration) bool {
	return p.w.live != nil && p.w.live.sweep(at) > 0 && b.judgeInFlight(p, at)
}

// judgeInFlight judges the rates of CLOSED period p at time at, counting
// the calls in flight for SlowCallDuration as slow, and trips the breaker
// if they cross a threshold. It reports whether it tripped.
func (b *Breaker) judgeInFlight(p *period, at time.Duration) bool {
	n := p.w.counts(at)
	if !b.cfg.Exceeded(int(n.calls), int(n.failures), int(n.slow)) {
		return false
	}
	b.tripFrom(p, true, inFlightReason)
	return true
}

// SlowInFlight returns the number of calls granted while CLOSED that have
// been in flight for Config.SlowCallDuration or more and not yet reported.
// It is 0 unless the breaker is CLOSED and tracks slow calls. Stores use it
// to count calls in flight in their aggregates.
func (b *Breaker) SlowInFlight() int {
	p := b.cur.Load()
	if p.state != StateClosed || p.w.live == nil {
		return 0
	}
	if b.sweepInFlight(p, b.since()) {
		return 0
	}
	return int(p.w.live.slowCount())
}

// newPeriodWindow returns the empty window of a new CLOSED period, with an
// in-flight count if slow calls are tracked.
func (b *Breaker) newPeriodWindow() *window {
	w := newWindow(&b.cfg)
	if b.cfg.tracksSlow() {
		w.live = newInflight(b.cfg.SlowCallDuration)
	}
	return w
}
