package breaker_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ragfuse/ragfuse/breaker"
)

// report makes one call that ends with o after d, reported for why.
func report(o breaker.Outcome, d time.Duration, why breaker.Reason) step {
	return func(h *harness) {
		h.t.Helper()
		p, err := h.b.Allow()
		if err != nil {
			h.t.Fatal(err)
		}
		h.clk.Advance(d)
		p.ReportReason(o, d, why)
	}
}

// tripped checks the breaker's last trip reason, and that its snapshot
// carries the same.
func tripped(want breaker.TripReason) step {
	return func(h *harness) {
		h.t.Helper()
		if got := h.b.LastTrip(); got != want {
			h.t.Fatalf("LastTrip = %+v, want %+v", got, want)
		}
		if got := h.b.Snapshot().LastTrip; got != want {
			h.t.Fatalf("Snapshot().LastTrip = %+v, want %+v", got, want)
		}
	}
}

var (
	timeout = breaker.Reason{Kind: "timeout", Message: "no answer within 2s"}
	status  = breaker.Reason{Kind: "status_5xx", Message: "HTTP 503"}
)

func TestLastTrip(t *testing.T) {
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tests := []struct {
		name  string
		cfg   breaker.Config
		steps []step
	}{
		{"never tripped", breaker.Config{}, []step{fail(1), tripped(breaker.TripReason{})}},
		{"consecutive failures keep the tripping failure's reason", breaker.Config{}, []step{
			report(breaker.Failure, time.Second, status), report(breaker.Failure, time.Second, timeout), want(open),
			tripped(breaker.TripReason{Cause: breaker.CauseConsecutiveFailures, Kind: "timeout",
				Message: "no answer within 2s", At: at(2 * time.Second)})}},
		{"failure rate", rateOnly, []step{ok(2), fail(1), report(breaker.Failure, 0, status), want(open),
			tripped(breaker.TripReason{Cause: breaker.CauseFailureRate, Kind: "status_5xx", Message: "HTTP 503", At: t0})}},
		{"slow-call rate", slowOnly, []step{ok(2), slow(1, time.Second),
			report(breaker.Success, time.Second, breaker.Reason{Kind: "slow", Message: "answered in 1s"}), want(open),
			tripped(breaker.TripReason{Cause: breaker.CauseSlowCallRate, Kind: "slow", Message: "answered in 1s", At: at(2 * time.Second)})}},
		{"a report without a reason leaves kind and message empty", breaker.Config{}, []step{fail(2),
			tripped(breaker.TripReason{Cause: breaker.CauseConsecutiveFailures, At: t0})}},
		{"failed probe", base, []step{fail(2), wait(10 * time.Second), report(breaker.Failure, time.Second, timeout),
			want(open), openUntil(31 * time.Second),
			tripped(breaker.TripReason{Cause: breaker.CauseProbeFailed, Kind: "timeout", Message: "no answer within 2s",
				At: at(11 * time.Second)})}},
		{"the reason outlives recovery", base, []step{report(breaker.Failure, 0, status), report(breaker.Failure, 0, status),
			wait(10 * time.Second), ok(1), want(closed),
			tripped(breaker.TripReason{Cause: breaker.CauseConsecutiveFailures, Kind: "status_5xx", Message: "HTTP 503", At: t0})}},
		{"ignored and successful outcomes keep no reason", breaker.Config{}, []step{
			report(breaker.Ignored, 0, timeout), report(breaker.Success, 0, timeout), want(closed), tripped(breaker.TripReason{})}},
		{"manual trip", breaker.Config{}, []step{wait(time.Minute), func(h *harness) { h.b.Trip() },
			tripped(breaker.TripReason{Cause: breaker.CauseManual, At: at(time.Minute)})}},
		{"a manual trip of an open breaker replaces the reason", breaker.Config{}, []step{fail(2), wait(time.Second),
			func(h *harness) { h.b.Trip() }, tripped(breaker.TripReason{Cause: breaker.CauseManual, At: at(time.Second)})}},
		{"TripBecause", breaker.Config{}, []step{func(h *harness) { h.b.TripBecause(breaker.CauseCluster, status) },
			want(open), tripped(breaker.TripReason{Cause: breaker.CauseCluster, Kind: "status_5xx", Message: "HTTP 503", At: t0})}},
		{"announced by another instance", breaker.Config{}, []step{
			func(h *harness) {
				h.b.Apply(breaker.Shared{State: breaker.StateOpen, OpenUntil: at(time.Minute), Origin: 7})
			},
			want(open), tripped(breaker.TripReason{Cause: breaker.CauseRemote, At: t0})}},
		{"an announcement that extends an open breaker keeps its reason", breaker.Config{}, []step{fail(2),
			func(h *harness) {
				h.b.Apply(breaker.Shared{State: breaker.StateOpen, OpenUntil: at(time.Hour), Origin: 7})
			},
			openUntil(time.Hour), tripped(breaker.TripReason{Cause: breaker.CauseConsecutiveFailures, At: t0})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.cfg, tt.steps) })
	}
}

// TestLastTripIgnoresEarlierPeriod guards the reason against a failure
// reported for a permit of a period that has ended.
func TestLastTripIgnoresEarlierPeriod(t *testing.T) {
	h := newHarness(t, breaker.Config{})
	old, err := h.b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	h.b.Trip()
	h.b.Reset()
	old.DoneReason(breaker.Failure, timeout)
	old.DoneReason(breaker.Failure, timeout) // a second report is a no-op too
	fail(1)(h)
	want(closed)(h)
	tripped(breaker.TripReason{Cause: breaker.CauseManual, At: t0})(h)
}

func TestLastTripClipsMessage(t *testing.T) {
	long := strings.Repeat("a", breaker.MaxReasonMessage-1) + "é and more" // é straddles the limit
	h := newHarness(t, breaker.Config{FailureThreshold: 1})
	report(breaker.Failure, 0, breaker.Reason{Kind: "status_5xx", Message: long})(h)
	got := h.b.LastTrip().Message
	if got != strings.Repeat("a", breaker.MaxReasonMessage-1) || !utf8.ValidString(got) {
		t.Fatalf("message clipped to %d bytes %q, want %d bytes of a", len(got), got, breaker.MaxReasonMessage-1)
	}
}

func TestMemoryStoreTripReason(t *testing.T) {
	// Each instance sees one failure; the cluster-wide window trips both.
	_, rs := cluster(t, 2, breaker.Config{FailureThreshold: 2})
	b0, b1 := rs[0].Get("m"), rs[1].Get("m")
	callOn(t, b0, breaker.Failure)
	callOn(t, b1, breaker.Failure)
	for _, b := range []*breaker.Breaker{b0, b1} {
		if got := b.LastTrip(); got.Cause != breaker.CauseCluster || !got.At.Equal(t0) {
			t.Errorf("%s: LastTrip = %+v, want cause cluster at t0", b.Name(), got)
		}
	}
}
