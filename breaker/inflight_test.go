package breaker_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
)

// inFlightConfig trips on a slow-call rate of one half over at least five
// calls; failures alone never trip it.
func inFlightConfig(window time.Duration) breaker.Config {
	return breaker.Config{
		FailureThreshold: -1,
		FailureRate:      -1,
		MinimumCalls:     5,
		Window:           20,
		WindowDuration:   window,
		SlowCallDuration: time.Second,
		SlowCallRate:     0.5,
		OpenDuration:     time.Minute,
	}
}

// grantN takes n permits that must be granted.
func grantN(h *harness, n int) []*breaker.Permit {
	h.t.Helper()
	ps := make([]*breaker.Permit, n)
	for i := range ps {
		p, err := h.b.Allow()
		if err != nil {
			h.t.Fatalf("Allow %d: %v", i+1, err)
		}
		ps[i] = &p
	}
	return ps
}

// inFlight checks Snapshot's Calls, Failures, SlowCalls and SlowInFlight.
func inFlight(h *harness, calls, failures, slow, slowInFlight int) {
	h.t.Helper()
	s := h.b.Snapshot()
	if s.State != breaker.StateClosed || s.Calls != calls || s.Failures != failures ||
		s.SlowCalls != slow || s.SlowInFlight != slowInFlight {
		h.t.Fatalf("%v calls %d failures %d slow %d slow in flight %d, want closed %d %d %d %d",
			s.State, s.Calls, s.Failures, s.SlowCalls, s.SlowInFlight, calls, failures, slow, slowInFlight)
	}
}

func TestInFlightSlowCallsTripBeforeAnyReturns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window time.Duration
	}{{"count window", 0}, {"time window", time.Minute}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, inFlightConfig(tc.window))
			ps := grantN(h, 5)
			h.clk.Advance(999 * time.Millisecond)
			inFlight(h, 0, 0, 0, 0) // not slow yet
			h.clk.Advance(150 * time.Millisecond)
			if _, err := h.b.Allow(); !errors.Is(err, breaker.ErrOpen) {
				t.Fatalf("Allow after the hung calls turned slow: %v, want ErrOpen", err)
			}
			lt := h.b.LastTrip()
			if lt.Cause != breaker.CauseSlowCallRate || lt.Kind != "slow_in_flight" || !lt.At.Equal(h.clk.Now()) {
				t.Fatalf("LastTrip = %+v, want slow_call_rate / slow_in_flight now", lt)
			}
			// The hung calls end after the trip: their outcomes belong to
			// the earlier period and count nowhere.
			for _, p := range ps {
				p.Done(breaker.Failure)
			}
			if s := h.b.Snapshot(); s.State != breaker.StateOpen || s.Trips != 1 {
				t.Fatalf("after the late outcomes: %v, %d trips, want open, 1", s.State, s.Trips)
			}
		})
	}
}

func TestInFlightTripSeenByState(t *testing.T) {
	h := newHarness(t, inFlightConfig(0))
	grantN(h, 5)
	h.clk.Advance(1200 * time.Millisecond)
	if s := h.b.State(); s != breaker.StateOpen {
		t.Fatalf("State = %v with five calls in flight past the threshold, want open", s)
	}
}

func TestInFlightSlowCallReplacedByItsOutcome(t *testing.T) {
	cfg := inFlightConfig(0)
	cfg.MinimumCalls = 20 // judge nothing: watch the counts
	h := newHarness(t, cfg)
	ps := grantN(h, 4)
	quick := grantN(h, 1)[0]
	h.clk.Advance(500 * time.Millisecond)
	quick.Done(breaker.Success) // before the threshold: a plain success
	inFlight(h, 1, 0, 0, 0)
	h.clk.Advance(time.Second)
	inFlight(h, 5, 0, 4, 4)

	ps[0].Done(breaker.Failure) // counted once, as a failure
	inFlight(h, 5, 1, 3, 3)
	ps[0].Done(breaker.Failure) // a second report is a no-op
	inFlight(h, 5, 1, 3, 3)
	ps[1].Report(breaker.Success, time.Millisecond) // past the threshold: slow whatever it says
	inFlight(h, 5, 1, 3, 2)
	ps[2].Done(breaker.Success)
	inFlight(h, 5, 1, 3, 1)
	ps[3].Done(breaker.Ignored) // counts nowhere: its slow mark goes
	inFlight(h, 4, 1, 2, 0)
	if got := h.b.SlowInFlight(); got != 0 {
		t.Fatalf("SlowInFlight = %d, want 0", got)
	}
}

func TestInFlightFailureAfterSlowTripsFailureRate(t *testing.T) {
	cfg := inFlightConfig(0)
	cfg.SlowCallRate = 1 // half of the calls slow: no trip
	cfg.FailureRate = 0.4
	h := newHarness(t, cfg)
	h.mustCall(breaker.Success, 0, 5)
	ps := grantN(h, 5)
	h.clk.Advance(1200 * time.Millisecond)
	inFlight(h, 10, 0, 5, 5)
	for _, p := range ps[:3] {
		p.Done(breaker.Failure)
	}
	inFlight(h, 10, 3, 2, 2)    // each failure replaced a slow mark
	ps[3].Done(breaker.Failure) // 4/10 failures
	s := h.b.Snapshot()
	if s.State != breaker.StateOpen || s.Trips != 1 || s.LastTrip.Cause != breaker.CauseFailureRate {
		t.Fatalf("%v trips %d cause %v, want open, 1, failure_rate", s.State, s.Trips, s.LastTrip.Cause)
	}
}

func TestInFlightLateOutcomesAfterGenerationChange(t *testing.T) {
	cfg := inFlightConfig(0)
	cfg.MinimumCalls = 20
	h := newHarness(t, cfg)
	ps := grantN(h, 6)
	h.clk.Advance(1500 * time.Millisecond)
	inFlight(h, 6, 0, 6, 6)
	h.b.Reset() // a new generation: the calls in flight are not its own
	inFlight(h, 0, 0, 0, 0)
	h.clk.Advance(5 * time.Second)
	for i, p := range ps {
		p.Done([]breaker.Outcome{breaker.Success, breaker.Failure, breaker.Ignored}[i%3])
	}
	inFlight(h, 0, 0, 0, 0)
	h.mustCall(breaker.Success, 0, 2)
	inFlight(h, 2, 0, 0, 0)
}

func TestInFlightNotTrackedWithoutSlowRule(t *testing.T) {
	cfg := inFlightConfig(0)
	cfg.SlowCallRate = -1
	h := newHarness(t, cfg)
	grantN(h, 5)
	h.clk.Advance(time.Hour)
	inFlight(h, 0, 0, 0, 0)
}

// TestInFlightConcurrentCountsSettle reports many calls from several
// goroutines while the clock moves; once all are reported, nothing is left
// in flight and every success or failure is counted exactly once.
func TestInFlightConcurrentCountsSettle(t *testing.T) {
	cfg := inFlightConfig(time.Hour)
	cfg.MinimumCalls = 1 << 20 // never judged: count only
	cfg.WindowBuckets = 1
	h := newHarness(t, cfg)
	const workers, calls = 8, 300
	var wg sync.WaitGroup
	var mu sync.Mutex
	counted := 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			var held []*breaker.Permit
			n := 0
			for range calls {
				p, err := h.b.Allow()
				if err != nil {
					t.Error(err)
					return
				}
				held = append(held, &p)
				if r.IntN(4) == 0 {
					h.clk.Advance(time.Duration(r.IntN(300)) * time.Millisecond)
				}
				for len(held) > 0 && r.IntN(2) == 0 {
					k := r.IntN(len(held))
					o := breaker.Outcome(r.IntN(3))
					if o != breaker.Ignored {
						n++
					}
					held[k].Done(o)
					held = append(held[:k], held[k+1:]...)
				}
			}
			for _, p := range held {
				p.Done(breaker.Success)
				n++
			}
			mu.Lock()
			counted += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	s := h.b.Snapshot()
	if s.SlowInFlight != 0 || s.Calls != counted {
		t.Fatalf("slow in flight %d, calls %d; want 0, %d", s.SlowInFlight, s.Calls, counted)
	}
}
