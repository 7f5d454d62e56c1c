package breaker

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragfuse/ragfuse/clock"
)

// Breaker is a circuit breaker guarding one dependency. It is safe for
// concurrent use.
//
// The CLOSED path (Allow, then Done or Report) takes no lock and does not
// allocate: the state lives in an immutable period record behind an atomic
// pointer, and the window is made of atomic counters. The mutex is taken
// only for transitions and while half-open or open.
type Breaker struct {
	name      string
	cfg       Config // effective; read-only after New
	store     Store
	rec       Recorder // the store's recorder for this breaker, if it binds one
	clock     clock.Clock
	sysClock  bool      // clock is clock.System: call time.Now directly
	needStart bool      // slow calls are measured: Allow reads the clock
	timeWin   bool      // time-based window: reports read the clock
	origin    time.Time // hot-path times are offsets from it (see since)
	id        uint64    // identifies this breaker's announcements to a Store

	cur atomic.Pointer[period] // the current period; replaced only under mu

	_        [cacheLine]byte
	rejected atomic.Uint64

	mu         sync.Mutex    // guards the fields below and the half-open fields of every period
	openFor    time.Duration // open time of the next trip; grows with failed probes
	trips      uint64
	probeSeq   uint64
	pending    []event // changes not yet delivered to listeners and the store
	spare      []event
	delivering bool // a goroutine is delivering pending

	lastTrip TripReason // what tripped the breaker most recently
}

// period is one stretch of time in one state. Its first four fields never
// change after it is published in Breaker.cur, so the CLOSED path can read
// them without a lock. A period is replaced, never reset, so an outcome
// that belongs to an earlier period is recognised by pointer and ignored.
type period struct {
	state     State
	gen       uint64
	openUntil time.Time // OPEN: when it turns HALF_OPEN
	w         *window   // CLOSED: the sliding window

	// HALF_OPEN only; guarded by Breaker.mu.
	probes     []probe
	successes  int
	leaseUntil time.Time // the Store's probe lease is held until then
	acquiring  bool      // a caller is asking the Store for the lease
}

// probe is one admitted half-open call.
type probe struct {
	id       uint64
	deadline time.Time
}

// event is one state change waiting to be delivered.
type event struct {
	from, to State
	shared   Shared
	publish  bool // local change: tell the Store
}

// New returns a CLOSED breaker named name. Zero fields of cfg take their
// documented defaults. If cfg.Store implements Attacher, New attaches the
// breaker to it.
func New(name string, cfg Config) *Breaker {
	cfg = cfg.WithDefaults()
	b := &Breaker{
		name:      name,
		cfg:       cfg,
		store:     cfg.Store,
		clock:     cfg.Clock,
		needStart: cfg.SlowCallDuration > 0,
		timeWin:   cfg.WindowDuration > 0,
		id:        rand.Uint64() | 1,
		openFor:   cfg.OpenDuration,
	}
	b.sysClock = cfg.Clock == clock.System
	b.origin = b.now()
	b.cur.Store(&period{state: StateClosed, w: b.newPeriodWindow()})
	if bd, ok := cfg.Store.(Binder); ok {
		b.rec = bd.Bind(b)
	}
	if a, ok := cfg.Store.(Attacher); ok {
		a.Attach(b)
	}
	return b
}

// Name returns the name given to New.
func (b *Breaker) Name() string { return b.name }

// Config returns the effective configuration: cfg given to New with its
// defaults filled in.
func (b *Breaker) Config() Config { return b.cfg }

func (b *Breaker) now() time.Time {
	if b.sysClock {
		return time.Now()
	}
	return b.clock.Now()
}

// since returns the time elapsed since the breaker was created. With the
// system clock it reads only the monotonic clock, which is cheaper than
// time.Now.
func (b *Breaker) since() time.Duration {
	if b.sysClock {
		return time.Since(b.origin)
	}
	return b.clock.Now().Sub(b.origin)
}

// Allow asks for the right to make one call. On success the returned Permit
// must be reported with Done or Report. It returns ErrOpen while open and
// ErrTooManyProbes while half-open with every probe slot taken. It does not
// wait for other callers; the one call that can take time is the Store's
// AcquireProbe, made (outside the lock) for the first probe of a half-open
// period. A later probe of the period, admitted under that lease, is void
// when the lease ends if that comes before Config.ProbeTimeout.
func (b *Breaker) Allow() (Permit, error) {
	p := b.cur.Load()
	if p.state == StateClosed {
		if b.needStart {
			return b.grant(p, b.since())
		}
		return Permit{b: b, p: p}, nil
	}
	if p.state == StateOpen && b.now().Before(p.openUntil) {
		b.rejected.Add(1) // OPEN and staying so: reject without the lock
		return Permit{}, ErrOpen
	}
	return b.allowSlow(false)
}

// allowSlow is Allow for OPEN and HALF_OPEN periods, and AllowProbe if
// prober.
func (b *Breaker) allowSlow(prober bool) (Permit, error) {
	now := b.now()
	b.mu.Lock()
	p, changed := b.advanceLocked(now)
	var refuse error
	switch {
	case p.state == StateClosed && prober:
		refuse = ErrNoProbe
	case p.state == StateClosed: // closed by another goroutine meanwhile
		b.mu.Unlock()
		b.deliverIf(changed)
		return b.grant(p, now.Sub(b.origin))
	case p.state == StateOpen:
		refuse = ErrOpen
	case b.cfg.ActiveProbes && !prober:
		refuse = ErrProbing
	}
	if refuse != nil {
		b.mu.Unlock()
		if refuse != ErrNoProbe {
			b.rejected.Add(1)
		}
		b.deliverIf(changed)
		return Permit{}, refuse
	}
	p.expireLocked(now)
	if len(p.probes) >= b.cfg.HalfOpenMaxCalls || p.acquiring {
		b.mu.Unlock()
		b.rejected.Add(1)
		b.deliverIf(changed)
		return Permit{}, ErrTooManyProbes
	}
	b.probeSeq++
	id := b.probeSeq
	acquire := b.store != nil && !now.Before(p.leaseUntil)
	deadline := now.Add(b.cfg.ProbeTimeout)
	if b.store != nil && !acquire && p.leaseUntil.Before(deadline) {
		// Under a lease taken earlier: when it ends, another instance may
		// take it and probe, so this probe must be over by then.
		deadline = p.leaseUntil
	}
	p.probes = append(p.probes, probe{id: id, deadline: deadline})
	p.acquiring = acquire
	b.mu.Unlock()
	b.deliverIf(changed)
	if acquire {
		ok := b.store.AcquireProbe(b.name, b.cfg.ProbeTimeout)
		b.mu.Lock()
		p.acquiring = false
		if ok {
			p.leaseUntil = now.Add(b.cfg.ProbeTimeout)
		} else {
			p.removeLocked(id)
		}
		b.mu.Unlock()
		if !ok {
			b.rejected.Add(1)
			return Permit{}, ErrTooManyProbes
		}
	}
	return Permit{b: b, p: p, start: now.Sub(b.origin), probe: id}, nil
}

// advanceLocked turns an OPEN period whose time is up into HALF_OPEN and
// returns the current period and whether it changed. b.mu must be held.
func (b *Breaker) advanceLocked(now time.Time) (*period, bool) {
	p := b.cur.Load()
	if p.state == StateOpen && !now.Before(p.openUntil) {
		return b.setLocked(p, StateHalfOpen, time.Time{}, true), true
	}
	return p, false
}

// expireLocked frees the slots of probes whose permits are void by now.
// b.mu must be held.
func (p *period) expireLocked(now time.Time) {
	keep := p.probes[:0]
	for _, pr := range p.probes {
		if now.Before(pr.deadline) {
			keep = append(keep, pr)
		}
	}
	clear(p.probes[len(keep):])
	p.probes = keep
}

// removeLocked frees the slot of probe id and returns its deadline and
// whether it was held. b.mu must be held.
func (p *period) removeLocked(id uint64) (time.Time, bool) {
	for i, pr := range p.probes {
		if pr.id == id {
			p.probes = append(p.probes[:i], p.probes[i+1:]...)
			return pr.deadline, true
		}
	}
	return time.Time{}, false
}

// State returns the current state. An OPEN breaker whose open time is up
// reads, and becomes, HALF_OPEN; a CLOSED one whose calls in flight have
// turned slow enough to cross the slow-call rate reads, and becomes, OPEN.
func (b *Breaker) State() State {
	p := b.cur.Load()
	if p.state == StateClosed && b.sweepInFlight(p, b.since()) {
		p = b.cur.Load()
	}
	if p.state != StateOpen {
		return p.state
	}
	now := b.now()
	if now.Before(p.openUntil) {
		return StateOpen
	}
	b.mu.Lock()
	p, changed := b.advanceLocked(now)
	b.mu.Unlock()
	b.deliverIf(changed)
	return p.state
}

// Snapshot is a breaker's state and counters at one moment, for status pages
// and metrics.
type Snapshot struct {
	Name       string
	State      State
	Generation uint64 // increments on each state change and on Reset

	// Calls, Failures and SlowCalls count the outcomes in the current
	// window while CLOSED; while HALF_OPEN, Calls counts successful probes.
	// While CLOSED, SlowInFlight counts the calls in flight for
	// SlowCallDuration or more, which Calls and SlowCalls include.
	Calls, Failures, SlowCalls int
	SlowInFlight               int
	FailureRate, SlowCallRate  float64 // Failures/Calls and SlowCalls/Calls, 0 without calls
	ConsecutiveFailures        int
	OpenUntil                  time.Time // zero unless OPEN
	ProbesInFlight             int

	Trips    uint64 // transitions to OPEN since creation
	Rejected uint64 // calls refused since creation

	LastTrip TripReason // what tripped it most recently; zero if it never tripped
}

// Snapshot returns the breaker's state and counters.
func (b *Breaker) Snapshot() Snapshot {
	now := b.now()
	if p := b.cur.Load(); p.state == StateClosed {
		b.sweepInFlight(p, now.Sub(b.origin))
	}
	b.mu.Lock()
	p, changed := b.advanceLocked(now)
	s := Snapshot{
		Name:       b.name,
		State:      p.state,
		Generation: p.gen,
		Trips:      b.trips,
		Rejected:   b.rejected.Load(),
		LastTrip:   b.lastTrip,
	}
	switch p.state {
	case StateClosed:
		n := p.w.counts(now.Sub(b.origin))
		s.Calls, s.Failures, s.SlowCalls = int(n.calls), int(n.failures), int(n.slow)
		if p.w.live != nil {
			s.SlowInFlight = int(p.w.live.slowCount())
		}
		s.ConsecutiveFailures = int(p.w.consec.Load())
	case StateOpen:
		s.OpenUntil = p.openUntil
	case StateHalfOpen:
		p.expireLocked(now)
		s.ProbesInFlight = len(p.probes)
		s.Calls = p.successes
	}
	b.mu.Unlock()
	b.deliverIf(changed)
	if s.Calls > 0 {
		s.FailureRate = float64(s.Failures) / float64(s.Calls)
		s.SlowCallRate = float64(s.SlowCalls) / float64(s.Calls)
	}
	return s
}
