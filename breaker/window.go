package breaker

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// cacheLine is the padding that keeps often-written counters off the cache
// lines that every call reads.
const cacheLine = 64

// Codes of the outcomes held in a count window's slots.
const (
	slotEmpty uint32 = iota
	slotSuccess
	slotFailure
	slotSlow
)

// counts is what a window holds.
type counts struct {
	calls, failures, slow int64
}

// window is the sliding window of one CLOSED period, count- or time-based.
// It is written without locks by concurrent reporters; under contention it
// is exact in total but may place an outcome one slot or bucket off. A new
// window is made for every CLOSED period, so a late writer from an earlier
// period only touches a window nobody reads any more.
type window struct {
	_   [cacheLine]byte
	seq atomic.Uint64 // count mode: outcomes recorded so far
	_   [cacheLine - 8]byte

	failures atomic.Int64 // count mode: failure slots
	slow     atomic.Int64 // count mode: slow slots
	consec   atomic.Int64 // consecutive failures (both modes)
	lastBad  atomic.Int64 // time mode: newest epoch holding a failure or slow call, -1 if none
	judged   atomic.Int64 // time mode: epoch of the last judgement that found MinimumCalls and no trip, -1 if none
	_        [cacheLine - 40]byte

	slots []atomic.Uint32 // count mode: ring of outcome codes

	width   int64    // time mode: bucket width in nanoseconds
	buckets []bucket // time mode: ring indexed by epoch % len
	head    atomic.Int64
	advance sync.Mutex // serializes moving head; taken once per bucket width

	live *inflight // calls in flight, if the breaker counts slow ones before they return; nil otherwise
}

// bucket is one slice of a time window. epoch says which slice it holds.
type bucket struct {
	epoch    atomic.Int64
	calls    atomic.Int64
	failures atomic.Int64
	slow     atomic.Int64
	_        [cacheLine - 32]byte
}

// newWindow returns an empty window for the effective config c.
//
// Times given to a window are offsets from an origin chosen by its owner
// (for a Breaker, its creation), which is the start of epoch 0.
func newWindow(c *Config) *window {
	w := &window{}
	w.lastBad.Store(-1)
	w.judged.Store(-1)
	if c.WindowDuration <= 0 {
		w.slots = make([]atomic.Uint32, c.Window)
		return w
	}
	w.width = int64(c.WindowDuration) / int64(c.WindowBuckets)
	w.buckets = make([]bucket, c.WindowBuckets)
	for i := range w.buckets {
		w.buckets[i].epoch.Store(math.MinInt64)
	}
	w.head.Store(-1)
	return w
}

// epoch returns the number of the bucket that holds time at.
func (w *window) epoch(at time.Duration) int64 {
	if at < 0 {
		return 0
	}
	return int64(at) / w.width
}

// record adds one Success (fail false) or Failure outcome observed at time
// at and reports whether the effective config c says the breaker must trip.
//
// The rates are judged only when the outcome can change the verdict of the
// last judgement (see mayTrip); otherwise the answer is known to be false
// and record writes only the counters the outcome changes.
func (w *window) record(fail, slow bool, at time.Duration, c *Config) bool {
	code := slotSuccess
	switch {
	case fail:
		code = slotFailure
	case slow:
		code = slotSlow
	}
	var seq uint64
	var e int64
	if w.slots != nil {
		seq = w.recordCount(code)
	} else {
		e = w.recordTime(code, at)
	}
	if fail {
		if n := w.consec.Add(1); c.FailureThreshold > 0 && n >= int64(c.FailureThreshold) {
			return true
		}
	} else if w.consec.Load() != 0 {
		w.consec.Store(0)
	}
	if !c.judgesRates() || !w.mayTrip(code, seq, e, c) {
		return false
	}
	n := w.counts(at)
	if c.Exceeded(int(n.calls), int(n.failures), int(n.slow)) {
		return true
	}
	if w.slots == nil && n.calls >= int64(c.MinimumCalls) {
		w.judged.Store(e)
	}
	return false
}

// mayTrip reports whether an outcome just recorded (code; seq, its number in
// a count window; e, its bucket in a time window) can make the rates cross a
// threshold, so that they must be judged.
//
// Both rates are zero while the window holds no failure and no slow call,
// and the thresholds are positive. A failure or a slow call raises a rate.
// A plain success raises none: it adds a call and, in a count window, may
// push out a failure or a slow call. So after a success the rates are no
// higher than at the last judgement, which did not trip, unless that
// judgement was made on fewer than MinimumCalls calls or, in a time window,
// buckets have expired since. A count window holds fewer than MinimumCalls
// calls exactly until its outcome number MinimumCalls; a time window
// remembers the bucket of its last judgement on MinimumCalls calls, and
// within one bucket calls only grow.
func (w *window) mayTrip(code uint32, seq uint64, e int64, c *Config) bool {
	if w.live != nil && w.live.slowCount() > 0 {
		return true // calls in flight count too: judge while any is slow
	}
	if w.slots != nil {
		if w.failures.Load() == 0 && w.slow.Load() == 0 {
			return false
		}
		return code != slotSuccess || seq == uint64(c.MinimumCalls)
	}
	if lb := w.lastBad.Load(); lb < 0 || lb <= e-int64(len(w.buckets)) {
		return false
	}
	return code != slotSuccess || w.judged.Load() != e
}

// recordCount puts code into the next slot of the ring and returns the
// outcome's number, counting from 1.
func (w *window) recordCount(code uint32) uint64 {
	n := w.seq.Add(1)
	s := &w.slots[(n-1)%uint64(len(w.slots))]
	if s.Load() == code {
		return n // nothing changes: leave the cache line alone
	}
	old := s.Swap(code)
	// Take away before adding, so that a reader never sees an outcome
	// counted both as the failure it replaces and as the slow call it is.
	df, ds := delta(old, code, slotFailure), delta(old, code, slotSlow)
	if df < 0 {
		w.failures.Add(df)
	}
	if ds != 0 {
		w.slow.Add(ds)
	}
	if df > 0 {
		w.failures.Add(df)
	}
	return n
}

// delta is the change in the number of slots holding kind when a slot goes
// from old to code.
func delta(old, code, kind uint32) int64 {
	var d int64
	if old == kind {
		d--
	}
	if code == kind {
		d++
	}
	return d
}

// recordTime adds code to the bucket of time at and returns its epoch.
// While at falls in the head bucket, as it does for all but the first call
// of each bucket width, the epoch is known without a division.
func (w *window) recordTime(code uint32, at time.Duration) int64 {
	h := w.head.Load()
	e := h
	if lo := h * w.width; h < 0 || int64(at) < lo || int64(at)-lo >= w.width {
		e = w.epoch(at)
		switch {
		case e > h:
			w.advanceTo(e)
		case h-e >= int64(len(w.buckets)):
			e = w.rewindTo(e) // the clock stepped back a whole window or more
		case e < h:
			e = h // the clock stepped back a little, or at was read before a move: use the newest bucket
		}
	}
	b := &w.buckets[e%int64(len(w.buckets))]
	b.calls.Add(1)
	switch code {
	case slotFailure:
		b.failures.Add(1)
	case slotSlow:
		b.slow.Add(1)
	default:
		return e
	}
	if w.lastBad.Load() < e {
		w.lastBad.Store(e)
	}
	return e
}

// advanceTo moves head to epoch e, emptying the buckets it passes over.
func (w *window) advanceTo(e int64) {
	w.advance.Lock()
	defer w.advance.Unlock()
	w.advanceLocked(e)
}

// advanceLocked moves head to epoch e if e is ahead of it, emptying the
// buckets it passes over, and returns the head. w.advance must be held.
func (w *window) advanceLocked(e int64) int64 {
	h := w.head.Load()
	if e <= h {
		return h
	}
	w.emptyLocked(h+1, e)
	w.head.Store(e)
	return e
}

// emptyLocked empties the buckets of epochs from to e (at most the last
// len(w.buckets) of them) and labels them with their epochs. from must not
// be negative. w.advance must be held.
func (w *window) emptyLocked(from, e int64) {
	n := int64(len(w.buckets))
	for k := max(from, e-n+1); k <= e; k++ {
		b := &w.buckets[k%n]
		b.epoch.Store(math.MinInt64) // readers skip it while it is emptied
		b.calls.Store(0)
		b.failures.Store(0)
		b.slow.Store(0)
		b.epoch.Store(k)
	}
}

// rewindTo moves head back to epoch e, a whole window or more behind it,
// and empties the window. The clock stepped back: what the window holds was
// recorded at times that now lie ahead, and would stay in the window until
// the clock caught up with them. It returns the epoch to record in, which is
// not e if another reporter rewound the window meanwhile.
func (w *window) rewindTo(e int64) int64 {
	w.advance.Lock()
	defer w.advance.Unlock()
	n := int64(len(w.buckets))
	if w.head.Load()-e < n { // rewound meanwhile: as in recordTime
		return w.advanceLocked(e)
	}
	for i := range w.buckets {
		// Out of every reader's range; emptied before it is labelled again.
		w.buckets[i].epoch.Store(math.MinInt64)
	}
	w.lastBad.Store(-1)
	w.judged.Store(-1)
	w.emptyLocked(max(e-n+1, 0), e)
	w.head.Store(e)
	return e
}

// counts returns what the window holds at time at, plus the calls in
// flight for SlowCallDuration, counted as slow calls. Buckets that have
// expired by then are left out even if no call has moved the window yet.
// A time a whole window or more behind the head (the clock stepped back)
// finds the window empty, as the next outcome will (see rewindTo); a time
// less far behind counts up to the head.
func (w *window) counts(at time.Duration) counts {
	c := w.outcomes(at)
	if w.live != nil {
		n := w.live.slowCount()
		c.calls += n
		c.slow += n
	}
	return c
}

// outcomes is counts without the calls in flight.
func (w *window) outcomes(at time.Duration) counts {
	if w.slots != nil {
		// The counters are read before seq: an outcome's seq is counted
		// before its failure or slow mark, so calls then covers every mark
		// read. Outcomes racing for one slot of a full window can still
		// overshoot for a moment, hence the clamps.
		c := counts{failures: max(w.failures.Load(), 0), slow: max(w.slow.Load(), 0)}
		c.calls = int64(min(w.seq.Load(), uint64(len(w.slots))))
		c.failures = min(c.failures, c.calls)
		c.slow = min(c.slow, c.calls-c.failures)
		return c
	}
	e, h := w.epoch(at), w.head.Load()
	if h-e >= int64(len(w.buckets)) {
		return counts{}
	}
	e = max(e, h)
	var c counts
	for i := range w.buckets {
		b := &w.buckets[i]
		if k := b.epoch.Load(); k > e-int64(len(w.buckets)) && k <= e {
			// Marks before calls, as in the count window: a call is
			// counted before its mark.
			c.failures += b.failures.Load()
			c.slow += b.slow.Load()
			c.calls += b.calls.Load()
		}
	}
	return c
}
