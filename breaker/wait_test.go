package breaker_test

import (
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
)

// Calls waiting to start (queued behind a bulkhead) are not in flight: one
// hung call and four waiting ones do not trip a breaker that needs five
// slow calls, and the waiting ones, turned away, count nowhere.
func TestWaitingPermitsAreNotSlowInFlight(t *testing.T) {
	h := newHarness(t, inFlightConfig(0))
	ps := grantN(h, 5)
	for _, p := range ps[1:] {
		p.Wait()
	}
	h.clk.Advance(3 * time.Second)
	inFlight(h, 1, 0, 1, 1) // the hung call only
	for _, p := range ps[1:] {
		p.Done(breaker.Ignored) // skipped: never started
	}
	inFlight(h, 1, 0, 1, 1)
	if got := h.b.State(); got != breaker.StateClosed {
		t.Fatalf("state %v, want closed", got)
	}
	ps[0].Done(breaker.Success)
	inFlight(h, 1, 0, 1, 0)
}

// Begin starts the call's time anew: the in-flight count and Done measure
// it from Begin, not from Allow.
func TestBeginRestartsTheCallsTime(t *testing.T) {
	h := newHarness(t, inFlightConfig(0))
	ps := grantN(h, 2)
	for _, p := range ps {
		p.Wait()
	}
	h.clk.Advance(5 * time.Second) // queued
	for _, p := range ps {
		p.Begin()
	}
	h.clk.Advance(500 * time.Millisecond)
	inFlight(h, 0, 0, 0, 0)
	ps[0].Done(breaker.Success) // 0.5s since Begin: fast
	inFlight(h, 1, 0, 0, 0)
	h.clk.Advance(700 * time.Millisecond)
	inFlight(h, 2, 0, 1, 1) // 1.2s since Begin: slow in flight
	ps[1].Done(breaker.Success)
	inFlight(h, 2, 0, 1, 0)
}

// A permit reported while it waits is never slow, whatever its time since
// Allow; Begin after the report and Wait on the zero Permit are no-ops.
func TestReportWhileWaitingIsNotSlow(t *testing.T) {
	h := newHarness(t, inFlightConfig(0))
	p := grantN(h, 1)[0]
	p.Wait()
	h.clk.Advance(2 * time.Second)
	p.Done(breaker.Success)
	p.Begin()
	inFlight(h, 1, 0, 0, 0)
	var zero breaker.Permit
	zero.Wait()
	zero.Begin()
	zero.Done(breaker.Success)
	inFlight(h, 1, 0, 0, 0)
}
