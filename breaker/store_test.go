package breaker_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
)

// cluster is n registries, one per simulated instance, sharing a MemoryStore.
func cluster(t *testing.T, n int, cfg breaker.Config) (*clock.Manual, []*breaker.Registry) {
	t.Helper()
	clk := clock.NewManual(t0)
	cfg.Clock = clk
	cfg.Store = breaker.NewMemoryStore(clk)
	var rs []*breaker.Registry
	for range n {
		rs = append(rs, breaker.NewRegistry(cfg))
	}
	return clk, rs
}

func callOn(t *testing.T, b *breaker.Breaker, o breaker.Outcome) {
	t.Helper()
	p, err := b.Allow()
	if err != nil {
		t.Fatalf("%s: %v", b.Name(), err)
	}
	p.Done(o)
}

func TestMemoryStoreTripSpreads(t *testing.T) {
	clk, rs := cluster(t, 3, breaker.Config{OpenDuration: 10 * time.Second, FailureThreshold: 2})
	b0, b1, b2 := rs[0].Get("m"), rs[1].Get("m"), rs[2].Get("m")
	other := rs[1].Get("other")
	callOn(t, b0, breaker.Failure)
	callOn(t, b0, breaker.Failure)
	for _, b := range []*breaker.Breaker{b0, b1, b2} {
		s := b.Snapshot()
		if s.State != open || !s.OpenUntil.Equal(t0.Add(10*time.Second)) {
			t.Fatalf("instance %v: %v until %v", b, s.State, s.OpenUntil)
		}
	}
	if other.State() != closed {
		t.Fatal("a breaker of another name opened")
	}

	// Only one instance probes the half-open breaker.
	clk.Advance(10 * time.Second)
	probe, err := b1.Allow()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []*breaker.Breaker{b0, b2} {
		if _, err := b.Allow(); !errors.Is(err, breaker.ErrTooManyProbes) {
			t.Fatalf("second probe in the cluster: %v", err)
		}
	}
	probe.Done(breaker.Success)
	for i, b := range []*breaker.Breaker{b0, b1, b2} {
		if s := b.State(); s != closed {
			t.Fatalf("instance %d after the probe succeeded: %v", i, s)
		}
	}
}

func TestMemoryStoreFailedProbeReopensAll(t *testing.T) {
	clk, rs := cluster(t, 2, breaker.Config{OpenDuration: 10 * time.Second, FailureThreshold: 1})
	b0, b1 := rs[0].Get("m"), rs[1].Get("m")
	b0.Trip()
	clk.Advance(10 * time.Second)
	callOn(t, b1, breaker.Failure)
	for i, b := range []*breaker.Breaker{b0, b1} {
		s := b.Snapshot()
		if s.State != open || !s.OpenUntil.Equal(t0.Add(20*time.Second)) {
			t.Fatalf("instance %d: %v until %v", i, s.State, s.OpenUntil)
		}
	}
}

func TestMemoryStoreProbeLeaseExpires(t *testing.T) {
	clk, rs := cluster(t, 2, breaker.Config{OpenDuration: 10 * time.Second, ProbeTimeout: 3 * time.Second})
	b0, b1 := rs[0].Get("m"), rs[1].Get("m")
	b0.Trip()
	clk.Advance(10 * time.Second)
	hung, err := b0.Allow()
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second) // b0's probe hangs past its lease
	p, err := b1.Allow()
	if err != nil {
		t.Fatalf("probe after the lease expired: %v", err)
	}
	hung.Done(breaker.Success) // void
	if b0.State() != halfOpen {
		t.Fatal("a void probe closed the breaker")
	}
	p.Done(breaker.Success)
	if b0.State() != closed || b1.State() != closed {
		t.Fatal("cluster did not close")
	}
}

func TestMemoryStoreAggregates(t *testing.T) {
	// Each instance sees one failure; the cluster sees two in a row.
	_, rs := cluster(t, 2, breaker.Config{FailureThreshold: 2})
	b0, b1 := rs[0].Get("m"), rs[1].Get("m")
	callOn(t, b0, breaker.Failure)
	callOn(t, b1, breaker.Failure)
	if b0.State() != open || b1.State() != open {
		t.Fatalf("states %v %v, want both open", b0.State(), b1.State())
	}

	// Rates over the aggregated window.
	_, rs = cluster(t, 2, breaker.Config{FailureThreshold: -1, Window: 4, MinimumCalls: 4, FailureRate: 0.5})
	b0, b1 = rs[0].Get("m"), rs[1].Get("m")
	for _, b := range []*breaker.Breaker{b0, b1} {
		callOn(t, b, breaker.Success)
		callOn(t, b, breaker.Failure)
	}
	if s := b0.Snapshot(); s.State != open {
		t.Fatalf("aggregate 2/4 did not trip: %+v", s)
	}
}

func TestMemoryStoreDetach(t *testing.T) {
	clk := clock.NewManual(t0)
	m := breaker.NewMemoryStore(clk)
	b0 := breaker.New("m", breaker.Config{Clock: clk, Store: m})
	b1 := breaker.New("m", breaker.Config{Clock: clk, Store: m})
	m.Attach(b1) // twice: no effect
	m.Detach(b1)
	b0.Trip()
	if b1.State() != closed {
		t.Fatal("a detached breaker heard the trip")
	}
	m.Detach(b0)
	m.Record("m", breaker.Failure, false) // no breaker: nothing to do
}

// recStore records what a breaker tells its Store.
type recStore struct {
	mu      sync.Mutex
	log     []string
	acquire bool
}

func (s *recStore) Publish(name string, sh breaker.Shared) {
	s.add(fmt.Sprintf("publish %s %v", name, sh.State))
}

func (s *recStore) Record(name string, o breaker.Outcome, slow bool) {
	s.add(fmt.Sprintf("record %s %v %v", name, o, slow))
}

func (s *recStore) AcquireProbe(name string, lease time.Duration) bool {
	s.add(fmt.Sprintf("acquire %s %v", name, lease))
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acquire
}

func (s *recStore) add(x string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, x)
}

func (s *recStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.log
	s.log = nil
	return l
}

func TestStoreCalls(t *testing.T) {
	st := &recStore{}
	h := newHarness(t, breaker.Config{Store: st, SuccessThreshold: 2, HalfOpenMaxCalls: 2,
		OpenDuration: 10 * time.Second, ProbeTimeout: 4 * time.Second, SlowCallDuration: time.Second})
	slow(1, time.Second)(h)
	ign(1)(h)
	fail(2)(h)
	rejects(breaker.ErrOpen)(h)
	wait(10 * time.Second)(h)
	rejects(breaker.ErrTooManyProbes)(h) // the store refuses the lease
	if n := h.b.Snapshot().ProbesInFlight; n != 0 {
		t.Fatalf("refused probe kept its slot: %d in flight", n)
	}
	st.mu.Lock()
	st.acquire = true
	st.mu.Unlock()
	ok(1)(h)
	ok(1)(h) // within the lease: no second acquire
	want(closed)(h)
	wantLog := []string{
		"record dep success true", "record dep failure false", "record dep failure false",
		"publish dep open", "publish dep half_open", "acquire dep 4s", "acquire dep 4s",
		"publish dep closed",
	}
	if got := st.take(); !slices.Equal(got, wantLog) {
		t.Fatalf("store calls:\n%q\nwant\n%q", got, wantLog)
	}
}

func TestApply(t *testing.T) {
	st := &recStore{}
	h := newHarness(t, breaker.Config{Store: st, OpenDuration: 10 * time.Second})
	h.b.Apply(breaker.Shared{State: open, OpenUntil: t0.Add(-time.Second)}) // already over
	want(closed)(h)
	h.b.Apply(breaker.Shared{State: halfOpen}) // only ends a local open time
	want(closed)(h)
	h.b.Apply(breaker.Shared{State: open, OpenUntil: t0.Add(time.Minute)})
	openUntil(time.Minute)(h)
	h.b.Apply(breaker.Shared{State: open, OpenUntil: t0.Add(time.Second)}) // earlier: keeps the later
	openUntil(time.Minute)(h)
	h.b.Apply(breaker.Shared{State: halfOpen})
	want(halfOpen)(h)
	h.b.Apply(breaker.Shared{State: open}) // zero OpenUntil: local open duration
	openUntil(10 * time.Second)(h)
	h.b.Apply(breaker.Shared{State: closed})
	want(closed)(h)
	if got := st.take(); len(got) != 0 {
		t.Fatalf("Apply announced changes back to the store: %q", got)
	}
	if want := []string{"closed>open", "open>half_open", "half_open>open", "open>closed"}; !slices.Equal(h.Changes(), want) {
		t.Fatalf("changes = %v", h.Changes())
	}
}

// TestProbeEndsWithLease guards the rule that only one instance in the
// cluster probes a half-open breaker. A probe admitted under a store lease
// taken earlier in the period must be void when that lease ends, not
// ProbeTimeout after its own start: once the lease is over another instance
// may take it and probe, and the two probes would then run at once.
func TestProbeEndsWithLease(t *testing.T) {
	clk, rs := cluster(t, 2, breaker.Config{OpenDuration: 10 * time.Second})
	a, b := rs[0].Get("m"), rs[1].Get("m")
	a.Trip()
	clk.Advance(10 * time.Second)
	p1, err := a.Allow() // takes the store lease for 10s
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(9 * time.Second)
	p1.Done(breaker.Ignored)
	p2, err := a.Allow() // under the same lease, 1s before it ends
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second) // the lease is over
	_, err = b.Allow()
	if n := a.Snapshot().ProbesInFlight + b.Snapshot().ProbesInFlight; n > 1 {
		t.Errorf("%d probes in flight in the cluster (b.Allow: %v)", n, err)
	}
	p2.Done(breaker.Success)
}

// TestBackoffGrowsAcrossInstances guards the open-time backoff of a
// cluster: consecutive failed probes grow the open time by OpenBackoff
// whichever instance made them (10s, 20s, 40s), because a breaker that is
// not CLOSED takes a longer announced open time as its own. A fresh trip
// after the cluster closed starts again at OpenDuration on every instance.
func TestBackoffGrowsAcrossInstances(t *testing.T) {
	clk, rs := cluster(t, 2, breaker.Config{OpenDuration: 10 * time.Second,
		OpenBackoff: 2, MaxOpenDuration: time.Hour, ProbeTimeout: time.Second})
	a, b := rs[0].Get("m"), rs[1].Get("m")
	openFor := func(step string, want time.Duration) {
		t.Helper()
		for i, x := range []*breaker.Breaker{a, b} {
			if s := x.Snapshot(); s.State != open || s.OpenUntil.Sub(clk.Now()) != want {
				t.Errorf("%s: instance %d %v for %v, want open for %v", step, i, s.State, s.OpenUntil.Sub(clk.Now()), want)
			}
		}
	}
	a.Trip()
	openFor("first trip", 10*time.Second)
	clk.Advance(10 * time.Second)
	callOn(t, a, breaker.Failure)
	openFor("first failed probe, on a", 20*time.Second)
	clk.Advance(20 * time.Second)
	callOn(t, b, breaker.Failure)
	openFor("second failed probe in a row, on b", 40*time.Second)
	clk.Advance(40 * time.Second)
	callOn(t, a, breaker.Success)
	if a.State() != closed || b.State() != closed {
		t.Fatalf("states %v %v after a successful probe, want both closed", a.State(), b.State())
	}
	b.Trip()
	openFor("trip after the close", 10*time.Second)
}

// TestMemoryStoreFailedProbeFreesLease guards the lease of a MemoryStore:
// publishing an OPEN frees it, as the Redis store does, so that the next
// half-open period can take it. With an open time shorter than the probe
// timeout, a lone breaker whose probe failed is half-open again before its
// old lease would end, and must still be able to probe.
func TestMemoryStoreFailedProbeFreesLease(t *testing.T) {
	clk := clock.NewManual(t0)
	b := breaker.New("m", breaker.Config{Clock: clk, Store: breaker.NewMemoryStore(clk),
		OpenDuration: 500 * time.Millisecond}) // ProbeTimeout: 1s
	b.Trip()
	clk.Advance(500 * time.Millisecond)
	callOn(t, b, breaker.Failure)
	clk.Advance(500 * time.Millisecond)
	if _, err := b.Allow(); err != nil {
		t.Errorf("half-open breaker, no probe in flight anywhere: Allow = %v, state %v", err, b.State())
	}
}
