package breaker

import (
	"slices"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/clock"
)

// MemoryStore is a Store kept in this process, shared by several breakers
// of the same name, typically one per Registry to simulate several
// instances in tests and drills. It is safe for concurrent use.
//
// Breakers created with the store attach to it automatically (it is an
// Attacher). Publish delivers the announcement synchronously to every
// attached breaker of that name through Apply (the announcer ignores its
// own). AcquireProbe grants one lease per name at a time, timed with the
// store's clock; as in the Redis store, publishing an OPEN (a trip or a
// failed probe) frees it for the next half-open period. Record aggregates
// the outcomes of all attached breakers of a name in one window, configured
// like the first breaker attached under that name, and trips all of them
// when the aggregate crosses the thresholds; the aggregate restarts on
// every published transition.
type MemoryStore struct {
	clock clock.Clock

	mu       sync.Mutex // guards the maps
	breakers map[string][]*Breaker
	leases   map[string]time.Time // name -> end of the probe lease
	agg      map[string]*aggregate
}

// aggregate is the cluster-wide window of one name.
type aggregate struct {
	cfg    Config
	w      *window
	origin time.Time
}

var (
	_ Store    = (*MemoryStore)(nil)
	_ Attacher = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty MemoryStore using clk for leases and
// time windows; nil means clock.System.
func NewMemoryStore(clk clock.Clock) *MemoryStore {
	if clk == nil {
		clk = clock.System
	}
	return &MemoryStore{
		clock:    clk,
		breakers: make(map[string][]*Breaker),
		leases:   make(map[string]time.Time),
		agg:      make(map[string]*aggregate),
	}
}

// Attach adds b to the breakers that hear announcements for its name.
// Attaching a breaker twice has no further effect.
func (m *MemoryStore) Attach(b *Breaker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.breakers[b.name], b) {
		m.breakers[b.name] = append(m.breakers[b.name], b)
	}
}

// Detach removes b; it hears no more announcements.
func (m *MemoryStore) Detach(b *Breaker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bs := slices.DeleteFunc(m.breakers[b.name], func(x *Breaker) bool { return x == b })
	if len(bs) == 0 {
		delete(m.breakers, b.name)
		delete(m.agg, b.name)
		return
	}
	m.breakers[b.name] = bs
}

// Publish hands s to every attached breaker named name. An OPEN frees the
// probe lease of name: the new open period's half-open period takes a new
// one.
func (m *MemoryStore) Publish(name string, s Shared) {
	m.mu.Lock()
	delete(m.agg, name)
	if s.State == StateOpen {
		delete(m.leases, name)
	}
	targets := slices.Clone(m.breakers[name])
	m.mu.Unlock()
	for _, b := range targets {
		b.Apply(s)
	}
}

// Record adds one outcome to the aggregate of name and trips every attached
// breaker of that name when the aggregate crosses the thresholds.
func (m *MemoryStore) Record(name string, o Outcome, slow bool) {
	if o >= Ignored {
		return
	}
	now := m.clock.Now()
	m.mu.Lock()
	bs := m.breakers[name]
	if len(bs) == 0 {
		m.mu.Unlock()
		return
	}
	a := m.agg[name]
	if a == nil {
		a = &aggregate{cfg: bs[0].Config(), origin: now}
		a.w = newWindow(&a.cfg)
		m.agg[name] = a
	}
	var targets []*Breaker
	if a.w.record(o == Failure, slow, now.Sub(a.origin), &a.cfg) {
		delete(m.agg, name)
		targets = slices.Clone(bs)
	}
	m.mu.Unlock()
	for _, b := range targets {
		b.TripBecause(CauseCluster, Reason{})
	}
}

// AcquireProbe grants the probe lease of name if no unexpired lease is held.
func (m *MemoryStore) AcquireProbe(name string, lease time.Duration) bool {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Before(m.leases[name]) {
		return false
	}
	m.leases[name] = now.Add(lease)
	return true
}
