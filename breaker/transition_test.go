package breaker_test

import (
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
)

const (
	closed   = breaker.StateClosed
	halfOpen = breaker.StateHalfOpen
	open     = breaker.StateOpen
)

// rateOnly judges the failure rate over a window of 4 calls and nothing else.
var rateOnly = breaker.Config{FailureThreshold: -1, Window: 4, MinimumCalls: 4, FailureRate: 0.5}

// slowOnly judges the slow-call rate over a window of 4 calls and nothing else.
var slowOnly = breaker.Config{
	FailureThreshold: -1, FailureRate: -1, Window: 4, MinimumCalls: 4,
	SlowCallDuration: time.Second, SlowCallRate: 0.5,
}

// timeWin judges the failure rate over a 10s window of 10 buckets, from 3 calls.
var timeWin = breaker.Config{
	FailureThreshold: -1, WindowDuration: 10 * time.Second, WindowBuckets: 10,
	MinimumCalls: 3, FailureRate: 0.5,
}

func TestClosedTrips(t *testing.T) {
	tests := []struct {
		name  string
		cfg   breaker.Config
		steps []step
	}{
		{"default threshold is 2", breaker.Config{}, []step{fail(1), want(closed), fail(1), want(open)}},
		{"one below consecutive threshold", breaker.Config{FailureThreshold: 3}, []step{fail(2), want(closed), counts(2, 2, 0, 2)}},
		{"at consecutive threshold", breaker.Config{FailureThreshold: 3}, []step{fail(3), want(open)}},
		{"success resets consecutive", breaker.Config{FailureThreshold: 3}, []step{fail(2), ok(1), fail(2), want(closed), counts(5, 4, 0, 2)}},
		{"slow success resets consecutive", breaker.Config{FailureThreshold: 3, SlowCallDuration: time.Second, SlowCallRate: -1},
			[]step{fail(2), slow(1, time.Second), fail(2), want(closed), counts(5, 4, 1, 2)}},
		{"ignored counts nowhere", breaker.Config{FailureThreshold: 3}, []step{fail(2), ign(5), counts(2, 2, 0, 2), fail(1), want(open)}},
		{"negative threshold disables the rule", breaker.Config{FailureThreshold: -1, FailureRate: -1}, []step{fail(100), want(closed)}},

		{"rate one below", rateOnly, []step{ok(3), fail(1), want(closed), counts(4, 1, 0, 1)}},
		{"rate exactly at threshold", rateOnly, []step{ok(2), fail(2), want(open)}},
		{"rate waits for minimum calls", rateOnly, []step{fail(3), want(closed), ok(1), want(open)}},
		{"rate ignores ignored", rateOnly, []step{fail(1), ign(3), ok(2), want(closed), counts(3, 1, 0, 0)}},
		{"count window slides", rateOnly, []step{
			fail(1), ok(3), counts(4, 1, 0, 0), ok(1), counts(4, 0, 0, 0),
			fail(1), want(closed), counts(4, 1, 0, 1), fail(1), want(open)}},
		{"minimum calls cut to window", breaker.Config{FailureThreshold: -1, Window: 2, FailureRate: 0.5},
			[]step{ok(1), fail(1), want(open)}},

		{"slow one below", slowOnly, []step{slow(1, time.Second), ok(3), want(closed), counts(4, 0, 1, 0)}},
		{"slow exactly at threshold", slowOnly, []step{slow(2, time.Second), ok(2), want(open)}},
		{"just under slow duration is not slow", slowOnly, []step{slow(4, time.Second-1), want(closed), counts(4, 0, 0, 0)}},
		{"slow failure is a failure, not slow", slowOnly, []step{
			func(h *harness) { h.mustCall(breaker.Failure, time.Hour, 4) }, want(closed), counts(4, 4, 0, 4)}},
		{"slow calls untracked without duration", breaker.Config{FailureThreshold: -1, FailureRate: -1, MinimumCalls: 1},
			[]step{slow(5, time.Hour), want(closed), counts(5, 0, 0, 0)}},

		{"time window below minimum", timeWin, []step{fail(2), want(closed), counts(2, 2, 0, 2)}},
		{"time window at minimum", timeWin, []step{fail(2), wait(9 * time.Second), ok(1), want(open)}},
		{"time window bucket just alive", timeWin, []step{fail(2), wait(10*time.Second - 1), ok(1), want(open)}},
		{"time window bucket expired", timeWin, []step{fail(2), wait(10 * time.Second), counts(0, 0, 0, 2), ok(1), want(closed), counts(1, 0, 0, 0)}},
		{"time window expires one bucket at a time", with(timeWin, func(c *breaker.Config) { c.MinimumCalls = 100 }), []step{
			fail(1), wait(time.Second), fail(1), wait(time.Second), ok(1), counts(3, 2, 0, 0),
			wait(8 * time.Second), counts(2, 1, 0, 0), wait(time.Second), counts(1, 0, 0, 0),
			wait(time.Second), counts(0, 0, 0, 0), ok(50), fail(49), want(closed), fail(1), want(open)}},
		{"time window skips idle gap", timeWin, []step{fail(2), wait(time.Hour), ok(2), fail(1), counts(3, 1, 0, 1), want(closed)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.cfg, tt.steps) })
	}
}

// TestTimeWindowClockStepBack guards a time window against a clock that
// steps back (a wall clock corrected by NTP, a clock.Manual moved back) by a
// whole window or more: the window starts again from the new time, so its
// outcomes expire as that time moves on, rather than piling up in the old
// newest bucket until the clock passes its old high-water mark.
func TestTimeWindowClockStepBack(t *testing.T) {
	h := newHarness(t, timeWin)
	wait(time.Hour)(h)
	ok(1)(h)
	wait(-time.Hour)(h) // the clock is corrected back
	fail(1)(h)
	counts(1, 1, 0, 1)(h)
	wait(5 * time.Minute)(h)
	counts(0, 0, 0, 1)(h) // a 10s window holds nothing from 5 minutes ago
	ok(1)(h)
	fail(1)(h)
	want(closed)(h) // 1 of 2 calls failed: below MinimumCalls
	counts(2, 1, 0, 1)(h)
}

// base opens for 10s, grows by 2 per failed probe up to 30s, and times
// probes out after 5s.
var base = breaker.Config{
	OpenDuration: 10 * time.Second, OpenBackoff: 2, MaxOpenDuration: 30 * time.Second,
	ProbeTimeout: 5 * time.Second,
}

func with(c breaker.Config, f func(*breaker.Config)) breaker.Config { f(&c); return c }

func TestOpenAndHalfOpen(t *testing.T) {
	tests := []struct {
		name  string
		cfg   breaker.Config
		steps []step
	}{
		{"open rejects until its time is up", base, []step{
			fail(2), openUntil(10 * time.Second), rejects(breaker.ErrOpen),
			wait(10*time.Second - 1), want(open), rejects(breaker.ErrOpen),
			wait(1), want(halfOpen)}},
		{"one probe by default", base, []step{
			fail(2), wait(10 * time.Second), want(halfOpen),
			func(h *harness) {
				p, err := h.b.Allow()
				if err != nil || !p.Probe() {
					h.t.Fatalf("first probe: %v probe=%v", err, p.Probe())
				}
				rejects(breaker.ErrTooManyProbes)(h)
				p.Done(breaker.Success)
			},
			want(closed), counts(0, 0, 0, 0)}},
		{"probe limit", with(base, func(c *breaker.Config) { c.HalfOpenMaxCalls = 2; c.SuccessThreshold = 3 }), []step{
			fail(2), wait(10 * time.Second),
			func(h *harness) {
				p1, err1 := h.b.Allow()
				p2, err2 := h.b.Allow()
				if err1 != nil || err2 != nil {
					h.t.Fatalf("probes: %v %v", err1, err2)
				}
				rejects(breaker.ErrTooManyProbes)(h)
				if n := h.b.Snapshot().ProbesInFlight; n != 2 {
					h.t.Fatalf("probes in flight = %d, want 2", n)
				}
				p1.Done(breaker.Success)
				p3, err := h.b.Allow() // the freed slot
				if err != nil {
					h.t.Fatalf("probe after a slot was freed: %v", err)
				}
				rejects(breaker.ErrTooManyProbes)(h)
				p2.Done(breaker.Success)
				want(halfOpen)(h)
				p3.Done(breaker.Success)
			},
			want(closed)}},
		{"success threshold one below and at", with(base, func(c *breaker.Config) { c.SuccessThreshold = 2 }), []step{
			fail(2), wait(10 * time.Second), ok(1), want(halfOpen),
			func(h *harness) {
				if s := h.b.Snapshot(); s.Calls != 1 {
					h.t.Fatalf("half-open successes = %d, want 1", s.Calls)
				}
			},
			ok(1), want(closed)}},
		{"probe failure reopens with backoff up to the cap", base, []step{
			fail(2), openUntil(10 * time.Second),
			wait(10 * time.Second), fail(1), openUntil(30 * time.Second), // 10s, then 20s
			wait(20 * time.Second), fail(1), openUntil(60 * time.Second), // 40s capped at 30s
			wait(30 * time.Second), fail(1), openUntil(90 * time.Second),
			wait(30 * time.Second), ok(1), want(closed),
			fail(2), openUntil(100 * time.Second)}}, // reset on close
		{"no backoff by default", breaker.Config{OpenDuration: 10 * time.Second}, []step{
			fail(2), wait(10 * time.Second), fail(1), openUntil(20 * time.Second)}},
		{"ignored probe frees its slot", with(base, func(c *breaker.Config) { c.SuccessThreshold = 2 }), []step{
			fail(2), wait(10 * time.Second), ign(3), want(halfOpen), ok(2), want(closed)}},
		{"expired probe permit", base, []step{
			fail(2), wait(10 * time.Second),
			func(h *harness) {
				p1, err := h.b.Allow()
				if err != nil {
					h.t.Fatal(err)
				}
				h.clk.Advance(5*time.Second - 1)
				rejects(breaker.ErrTooManyProbes)(h)
				h.clk.Advance(1)
				if n := h.b.Snapshot().ProbesInFlight; n != 0 {
					h.t.Fatalf("probes in flight after timeout = %d", n)
				}
				p2, err := h.b.Allow()
				if err != nil {
					h.t.Fatalf("probe after timeout: %v", err)
				}
				p1.Done(breaker.Success) // late: ignored
				want(halfOpen)(h)
				p1.Done(breaker.Failure) // duplicate: ignored
				want(halfOpen)(h)
				p2.Done(breaker.Success)
			},
			want(closed)}},
		{"expired probe reported before anyone freed it", base, []step{
			fail(2), wait(10 * time.Second),
			func(h *harness) {
				p, _ := h.b.Allow()
				h.clk.Advance(5 * time.Second)
				p.Done(breaker.Failure) // void: must not reopen
				want(halfOpen)(h)
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.cfg, tt.steps) })
	}
}
