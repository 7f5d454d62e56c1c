package breaker_test

// Scenarios that the test suites of other Go circuit breakers (sony/gobreaker,
// failsafe-go) cover, restated for this package's API and run against it.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
)

func TestConformanceConsecutiveFailures(t *testing.T) {
	// Trips after N consecutive failures; a success in between starts over.
	runSteps(t, breaker.Config{FailureThreshold: 5, OpenDuration: time.Minute}, []step{
		fail(4), ok(1), fail(4), want(closed), fail(1), want(open), rejects(breaker.ErrOpen),
	})
}

func TestConformanceFailureRatio(t *testing.T) {
	// Trips when 2 of the last 3 executions failed, not at 1 of 3.
	cfg := breaker.Config{FailureThreshold: -1, Window: 3, MinimumCalls: 3, FailureRate: 2.0 / 3}
	runSteps(t, cfg, []step{fail(1), ok(2), want(closed), fail(1), want(closed), fail(1), want(open)})
}

func TestConformanceHalfOpenMaxRequests(t *testing.T) {
	// Half-open admits exactly MaxRequests concurrent probes, then closes
	// once that many have succeeded.
	runSteps(t, breaker.Config{OpenDuration: time.Second, HalfOpenMaxCalls: 3, SuccessThreshold: 3}, []step{
		fail(2), wait(time.Second), func(h *harness) {
			var ps [3]breaker.Permit
			for i := range ps {
				var err error
				if ps[i], err = h.b.Allow(); err != nil {
					h.t.Fatalf("probe %d: %v", i, err)
				}
			}
			rejects(breaker.ErrTooManyProbes)(h)
			for i := range ps {
				want(halfOpen)(h)
				ps[i].Done(breaker.Success)
			}
		}, want(closed),
	})
}

func TestConformanceHalfOpenFailureReopens(t *testing.T) {
	// With a success threshold of 3, two successes then one failure reopens.
	runSteps(t, breaker.Config{OpenDuration: time.Second, SuccessThreshold: 3}, []step{
		fail(2), wait(time.Second), ok(2), want(halfOpen), fail(1), want(open), openUntil(2 * time.Second),
	})
}

func TestConformanceRemainingDelay(t *testing.T) {
	// The open time left shrinks with the clock and is zero once half-open.
	h := runSteps(t, breaker.Config{OpenDuration: time.Minute}, []step{fail(2), wait(20 * time.Second)})
	if left := h.b.Snapshot().OpenUntil.Sub(h.clk.Now()); left != 40*time.Second {
		t.Fatalf("remaining = %v, want 40s", left)
	}
	h.clk.Advance(40 * time.Second)
	if s := h.b.Snapshot(); s.State != halfOpen || !s.OpenUntil.IsZero() {
		t.Fatalf("after the delay: %v until %v", s.State, s.OpenUntil)
	}
}

func TestConformanceIntervalClearsCounts(t *testing.T) {
	// Counts of a CLOSED breaker are forgotten as time passes (a fixed
	// interval there, a rolling time window here).
	cfg := breaker.Config{FailureThreshold: 3, WindowDuration: 5 * time.Second, WindowBuckets: 5}
	runSteps(t, cfg, []step{
		fail(1), ok(1), counts(2, 1, 0, 0), wait(5 * time.Second), counts(0, 0, 0, 0),
	})
}

func TestConformanceRollingWindow(t *testing.T) {
	// Failures spread over a rolling window trip it; the same failures spread
	// wider than the window do not.
	cfg := breaker.Config{FailureThreshold: -1, WindowDuration: 4 * time.Second, WindowBuckets: 4,
		MinimumCalls: 4, FailureRate: 1}
	runSteps(t, cfg, []step{
		fail(1), wait(time.Second), fail(1), wait(time.Second), fail(1), wait(2 * time.Second),
		fail(1), want(closed), counts(3, 3, 0, 4), // consecutive failures do not expire
		fail(1), want(open),
	})
}

func TestConformanceGeneration(t *testing.T) {
	// A call granted before a state change and finished after it is not counted.
	h := newHarness(t, breaker.Config{OpenDuration: time.Second})
	p, _ := h.b.Allow()
	fail(2)(h)
	h.clk.Advance(time.Second)
	ok(1)(h) // probe closes
	before := h.b.Snapshot().Generation
	p.Done(breaker.Failure)
	if s := h.b.Snapshot(); s.Failures != 0 || s.Generation != before {
		t.Fatalf("stale outcome counted: %+v", s)
	}
}

func TestConformanceCustomSuccessAndExclusion(t *testing.T) {
	// A classifier can call some errors successes and exclude others.
	errNotFound := errors.New("not found")
	errCanceledByUser := errors.New("user went away")
	classify := func(err error) breaker.Outcome {
		switch {
		case err == nil, errors.Is(err, errNotFound):
			return breaker.Success
		case errors.Is(err, errCanceledByUser):
			return breaker.Ignored
		}
		return breaker.Failure
	}
	h := newHarness(t, breaker.Config{FailureThreshold: 2})
	ctx := context.Background()
	for _, err := range []error{errNotFound, errCanceledByUser, errors.New("x"), errCanceledByUser, errNotFound} {
		_ = h.b.DoWith(ctx, classify, func(context.Context) error { return err })
	}
	counts(3, 1, 0, 0)(h)
}

func TestConformanceStateChangeCallbacks(t *testing.T) {
	h := runSteps(t, breaker.Config{OpenDuration: time.Second, SuccessThreshold: 2}, []step{
		fail(2), wait(time.Second), want(halfOpen), fail(1), wait(time.Second), ok(2),
	})
	want := []string{"closed>open", "open>half_open", "half_open>open", "open>half_open", "half_open>closed"}
	if !slices.Equal(h.Changes(), want) {
		t.Fatalf("changes = %v, want %v", h.Changes(), want)
	}
}

func TestConformanceInParallel(t *testing.T) {
	// Concurrent successes and failures leave exact totals in the window.
	b := breaker.New("par", breaker.Config{FailureThreshold: -1, FailureRate: -1, Window: breaker.MaxWindow})
	var wg sync.WaitGroup
	var granted atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				p, err := b.Allow()
				if err != nil {
					t.Error(err)
					return
				}
				granted.Add(1)
				if (g+i)%4 == 0 {
					p.Done(breaker.Failure)
				} else {
					p.Done(breaker.Success)
				}
			}
		})
	}
	wg.Wait()
	if s := b.Snapshot(); s.Calls != 8000 || s.Failures != 2000 || granted.Load() != 8000 {
		t.Fatalf("snapshot = %+v", s)
	}
}
