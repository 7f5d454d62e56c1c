package breaker_test

import (
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
)

// TestConfigNegativeMaxOpenDuration checks the documented correction of
// MaxOpenDuration: only 0 means 10*OpenDuration; any value below
// OpenDuration, a negative one included, means OpenDuration, so a failed
// probe does not grow the open time.
func TestConfigNegativeMaxOpenDuration(t *testing.T) {
	clk := clock.NewManual(t0)
	b := breaker.New("m", breaker.Config{Clock: clk, FailureThreshold: 1, OpenDuration: time.Second,
		OpenBackoff: 2, MaxOpenDuration: -time.Second})
	if got := b.Config().MaxOpenDuration; got != time.Second {
		t.Fatalf("MaxOpenDuration = %v, want %v (OpenDuration)", got, time.Second)
	}
	b.Trip()
	clk.Advance(time.Second)
	p, err := b.Allow()
	if err != nil || !p.Probe() {
		t.Fatalf("Allow after the open time: probe %v, err %v", p.Probe(), err)
	}
	p.Done(breaker.Failure)
	if s := b.Snapshot(); s.State != breaker.StateOpen || !s.OpenUntil.Equal(clk.Now().Add(time.Second)) {
		t.Fatalf("after a failed probe: %v until +%v, want open for %v", s.State, s.OpenUntil.Sub(clk.Now()), time.Second)
	}
}
