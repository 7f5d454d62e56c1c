package breaker_test

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
)

// TestStress hammers one breaker from many goroutines through storms of
// failures and calm spells while one goroutine drives the clock, then checks
// invariants: probes in flight never exceed the limit, no outcome is counted
// twice or leaks into another generation, listeners see one ordered chain of
// changes, and snapshots are consistent.
func TestStress(t *testing.T) {
	const (
		workers  = 8
		maxProbe = 3
		steps    = 3000 // clock steps; the last third is calm
	)
	clk := clock.NewManual(t0)
	var (
		evMu   sync.Mutex
		events []breaker.State // from, to, from, to...
	)
	b := breaker.New("stress", breaker.Config{
		Clock: clk, FailureThreshold: 4, Window: breaker.MaxWindow, MinimumCalls: 20, FailureRate: 0.3,
		SlowCallDuration: 50 * time.Millisecond, SlowCallRate: 0.9,
		OpenDuration: time.Second, OpenBackoff: 2, MaxOpenDuration: 4 * time.Second,
		HalfOpenMaxCalls: maxProbe, SuccessThreshold: 2, ProbeTimeout: 24 * time.Hour,
		OnStateChange: func(_ string, from, to breaker.State) {
			evMu.Lock()
			defer evMu.Unlock()
			events = append(events, from, to)
		},
	})

	var (
		storm, stop atomic.Bool
		probeMu     sync.Mutex
		inFlight    = map[uint64]int{} // probes in flight per generation
		failed      atomic.Value
		attempts    atomic.Int64 // calls asked for; paces the clock
	)
	type tally struct{ calls, failures, ignored int }
	tallies := make([]map[uint64]tally, workers) // reported CLOSED outcomes per generation, per worker

	var wg sync.WaitGroup
	for w := range workers {
		tallies[w] = map[uint64]tally{}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for !stop.Load() {
				attempts.Add(1)
				p, err := b.Allow()
				if err != nil {
					runtime.Gosched()
					continue
				}
				gen := breaker.PermitGeneration(&p)
				if p.Probe() {
					probeMu.Lock()
					inFlight[gen]++
					if inFlight[gen] > maxProbe {
						failed.Store("more probes in flight than allowed")
					}
					probeMu.Unlock()
				}
				o := breaker.Success
				switch r := rng.IntN(10); {
				case r == 0:
					o = breaker.Ignored
				case storm.Load() && r < 6:
					o = breaker.Failure
				}
				if p.Probe() {
					probeMu.Lock()
					inFlight[gen]--
					probeMu.Unlock()
				} else {
					tl := tallies[w][gen]
					switch o {
					case breaker.Ignored: // a slow call if it ran past the threshold
						tl.ignored++
					case breaker.Failure:
						tl.failures++
						tl.calls++
					default:
						tl.calls++
					}
					tallies[w][gen] = tl
				}
				p.Report(o, time.Duration(rng.IntN(60))*time.Millisecond)
				p.Done(breaker.Failure) // duplicate: no-op
				runtime.Gosched()       // let the clock driver run
			}
		})
	}
	wg.Go(func() { // monitor
		for !stop.Load() {
			s := b.Snapshot()
			if s.ProbesInFlight > maxProbe || s.Failures+s.SlowCalls > s.Calls ||
				(s.State == breaker.StateOpen) == s.OpenUntil.IsZero() || s.State > breaker.StateOpen {
				failed.Store("inconsistent snapshot")
			}
			runtime.Gosched()
		}
	})
	for i := range steps {
		storm.Store(i < 2*steps/3 && (i/100)%2 == 0)
		clk.Advance(100 * time.Millisecond)
		// Let the workers make at least 20 attempts per clock step, so that
		// the clock cannot run ahead of them.
		for next := attempts.Load() + 20; attempts.Load() < next; {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		t.Fatal(msg)
	}

	s := b.Snapshot()
	if s.State != breaker.StateClosed {
		t.Fatalf("not closed after the calm spell: %+v", s)
	}
	var want tally
	for _, m := range tallies {
		want.calls += m[s.Generation].calls
		want.failures += m[s.Generation].failures
		want.ignored += m[s.Generation].ignored
	}
	if s.Calls < min(want.calls, breaker.MaxWindow) || s.Calls > min(want.calls+want.ignored, breaker.MaxWindow) ||
		s.Failures != want.failures || s.SlowInFlight != 0 {
		t.Fatalf("generation %d holds %d calls, %d failures, %d slow in flight; its permits reported %d (and %d ignored), %d",
			s.Generation, s.Calls, s.Failures, s.SlowInFlight, want.calls, want.ignored, want.failures)
	}
	if s.Trips == 0 {
		t.Fatal("the storms never tripped the breaker")
	}

	// The listener saw one unbroken chain of changes, one per generation.
	evMu.Lock()
	defer evMu.Unlock()
	prev, trips := breaker.StateClosed, uint64(0)
	for i := 0; i < len(events); i += 2 {
		if events[i] != prev || events[i] == events[i+1] {
			t.Fatalf("change %d: %v>%v after %v", i/2, events[i], events[i+1], prev)
		}
		prev = events[i+1]
		if prev == breaker.StateOpen {
			trips++
		}
	}
	if prev != s.State || trips != s.Trips || uint64(len(events)/2) != s.Generation {
		t.Fatalf("listener saw %d changes ending %v with %d trips; snapshot %+v", len(events)/2, prev, trips, s)
	}
}

// TestTimeWindowConcurrent writes to a time window from many goroutines
// while the clock crosses bucket boundaries, and checks that no outcome is
// lost or counted twice while all of them are inside the window.
func TestTimeWindowConcurrent(t *testing.T) {
	clk := clock.NewManual(t0)
	b := breaker.New("tw", breaker.Config{
		Clock: clk, FailureThreshold: -1, FailureRate: -1,
		WindowDuration: time.Hour, WindowBuckets: 10,
	})
	const workers, each = 6, 2000
	var wg sync.WaitGroup
	var stop atomic.Bool
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				p, err := b.Allow()
				if err != nil {
					t.Error(err)
					return
				}
				if (w+i)%3 == 0 {
					p.Done(breaker.Failure)
				} else {
					p.Done(breaker.Success)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { // crosses 5 bucket boundaries of 6 minutes, staying inside the hour
		defer close(done)
		for i := 0; i < 30 && !stop.Load(); i++ {
			clk.Advance(time.Minute)
			runtime.Gosched()
		}
	}()
	wg.Wait()
	stop.Store(true)
	<-done
	s := b.Snapshot()
	if s.Calls != workers*each || s.Failures != workers*each/3 {
		t.Fatalf("window holds %d calls, %d failures; want %d, %d", s.Calls, s.Failures, workers*each, workers*each/3)
	}
}
