package breaker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
)

func TestActiveProbesLeaveHalfOpenToTheProber(t *testing.T) {
	h := newHarness(t, breaker.Config{ActiveProbes: true, OpenDuration: 10 * time.Second})
	if _, err := h.b.AllowProbe(); !errors.Is(err, breaker.ErrNoProbe) || errors.Is(err, breaker.ErrNotPermitted) {
		t.Fatalf("AllowProbe while closed: %v, want ErrNoProbe", err)
	}
	h.b.Trip()
	if _, err := h.b.AllowProbe(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("AllowProbe while open: %v, want ErrOpen", err)
	}
	h.clk.Advance(10 * time.Second)
	for range 3 {
		if _, err := h.b.Allow(); !errors.Is(err, breaker.ErrProbing) || !errors.Is(err, breaker.ErrNotPermitted) {
			t.Fatalf("a caller's Allow while half-open: %v, want ErrProbing", err)
		}
	}
	probe, err := h.b.AllowProbe()
	if err != nil || !probe.Probe() {
		t.Fatalf("AllowProbe while half-open: probe %v, %v", probe.Probe(), err)
	}
	if _, err := h.b.AllowProbe(); !errors.Is(err, breaker.ErrTooManyProbes) {
		t.Fatalf("a second AllowProbe: %v, want ErrTooManyProbes", err)
	}
	probe.Done(breaker.Success)
	s := h.b.Snapshot()
	if s.State != breaker.StateClosed || s.Rejected != 5 {
		t.Fatalf("after the probe: %v, %d rejected; want closed, 5 (1 open, 3 callers, 1 probe slot)", s.State, s.Rejected)
	}
	if _, err := h.b.Allow(); err != nil {
		t.Fatalf("Allow after the probe closed it: %v", err)
	}
}

func TestAllowProbeWithoutActiveProbes(t *testing.T) {
	// Any breaker can be probed; callers may probe it too.
	h := newHarness(t, breaker.Config{OpenDuration: time.Second})
	h.b.Trip()
	h.clk.Advance(time.Second)
	probe, err := h.b.AllowProbe()
	if err != nil || !probe.Probe() {
		t.Fatalf("AllowProbe: %v", err)
	}
	probe.Done(breaker.Failure)
	if s := h.b.Snapshot(); s.State != breaker.StateOpen || s.LastTrip.Cause != breaker.CauseProbeFailed {
		t.Fatalf("after a failed probe: %v %v", s.State, s.LastTrip.Cause)
	}
	h.clk.Advance(time.Second)
	caller, err := h.b.Allow()
	if err != nil || !caller.Probe() {
		t.Fatalf("a caller's Allow while half-open: %v, want a probe", err)
	}
}

func TestActiveProbesOnePerClusterThroughTheStore(t *testing.T) {
	clk := clock.NewManual(t0)
	st := breaker.NewMemoryStore(clk)
	cfg := breaker.Config{ActiveProbes: true, OpenDuration: time.Second, Clock: clk, Store: st}
	a, b := breaker.New("m", cfg), breaker.New("m", cfg)
	a.Trip()
	clk.Advance(time.Second)
	pa, errA := a.AllowProbe()
	_, errB := b.AllowProbe()
	if errA != nil || !errors.Is(errB, breaker.ErrTooManyProbes) {
		t.Fatalf("AllowProbe on two instances: %v, %v; want one lease", errA, errB)
	}
	pa.Done(breaker.Success)
	if a.State() != breaker.StateClosed || b.State() != breaker.StateClosed {
		t.Fatalf("after the probe: %v, %v; want both closed", a.State(), b.State())
	}
}
