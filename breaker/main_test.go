package breaker_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the start time of every clock.Manual in the tests.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// harness drives one breaker with a clock.Manual and records its state
// changes.
type harness struct {
	t   *testing.T
	clk *clock.Manual
	b   *breaker.Breaker

	mu      sync.Mutex
	changes []string
}

func newHarness(t *testing.T, cfg breaker.Config) *harness {
	t.Helper()
	h := &harness{t: t, clk: clock.NewManual(t0)}
	cfg.Clock = h.clk
	cfg.OnStateChange = func(name string, from, to breaker.State) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.changes = append(h.changes, from.String()+">"+to.String())
	}
	h.b = breaker.New("dep", cfg)
	return h
}

// call makes one call that reports o after taking d on the clock.
func (h *harness) call(o breaker.Outcome, d time.Duration) error {
	h.t.Helper()
	p, err := h.b.Allow()
	if err != nil {
		return err
	}
	h.clk.Advance(d)
	p.Done(o)
	return nil
}

// mustCall makes n calls that must be permitted.
func (h *harness) mustCall(o breaker.Outcome, d time.Duration, n int) {
	h.t.Helper()
	for i := range n {
		if err := h.call(o, d); err != nil {
			h.t.Fatalf("call %d (%v): %v", i+1, o, err)
		}
	}
}

func (h *harness) Changes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.changes)
}

// step is one action or check of a table test.
type step func(h *harness)

func ok(n int) step   { return func(h *harness) { h.t.Helper(); h.mustCall(breaker.Success, 0, n) } }
func fail(n int) step { return func(h *harness) { h.t.Helper(); h.mustCall(breaker.Failure, 0, n) } }
func ign(n int) step  { return func(h *harness) { h.t.Helper(); h.mustCall(breaker.Ignored, 0, n) } }
func slow(n int, d time.Duration) step {
	return func(h *harness) { h.t.Helper(); h.mustCall(breaker.Success, d, n) }
}
func wait(d time.Duration) step { return func(h *harness) { h.clk.Advance(d) } }

func want(s breaker.State) step {
	return func(h *harness) {
		h.t.Helper()
		if got := h.b.State(); got != s {
			h.t.Fatalf("state = %v, want %v", got, s)
		}
	}
}

// rejects checks that the next call is refused with err.
func rejects(err error) step {
	return func(h *harness) {
		h.t.Helper()
		_, got := h.b.Allow()
		if !errors.Is(got, err) || !errors.Is(got, breaker.ErrNotPermitted) {
			h.t.Fatalf("Allow error = %v, want %v", got, err)
		}
	}
}

// counts checks the window of a CLOSED breaker.
func counts(calls, failures, slowCalls, consec int) step {
	return func(h *harness) {
		h.t.Helper()
		s := h.b.Snapshot()
		got := fmt.Sprint(s.Calls, s.Failures, s.SlowCalls, s.ConsecutiveFailures)
		if w := fmt.Sprint(calls, failures, slowCalls, consec); got != w {
			h.t.Fatalf("calls failures slow consecutive = %s, want %s", got, w)
		}
	}
}

// openUntil checks that the breaker is open until t0+d.
func openUntil(d time.Duration) step {
	return func(h *harness) {
		h.t.Helper()
		s := h.b.Snapshot()
		if s.State != breaker.StateOpen || !s.OpenUntil.Equal(t0.Add(d)) {
			h.t.Fatalf("state %v open until +%v, want open until +%v", s.State, s.OpenUntil.Sub(t0), d)
		}
	}
}

func runSteps(t *testing.T, cfg breaker.Config, steps []step) *harness {
	t.Helper()
	h := newHarness(t, cfg)
	for _, s := range steps {
		s(h)
	}
	return h
}
