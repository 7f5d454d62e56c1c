package breaker_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
)

func TestLateOutcomeOfEarlierGeneration(t *testing.T) {
	tests := []struct {
		name string
		late breaker.Outcome
	}{
		{"late success", breaker.Success},
		{"late failure", breaker.Failure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, base)
			old, err := h.b.Allow() // granted while CLOSED
			if err != nil {
				t.Fatal(err)
			}
			fail(2)(h)
			h.clk.Advance(10 * time.Second)
			probe, err := h.b.Allow()
			if err != nil {
				t.Fatal(err)
			}
			old.Done(tt.late) // must not close, reopen or free the probe slot
			want(halfOpen)(h)
			rejects(breaker.ErrTooManyProbes)(h)
			probe.Done(breaker.Success)
			want(closed)(h)
			counts(0, 0, 0, 0)(h)
		})
	}
}

func TestLateOutcomeAfterRecovery(t *testing.T) {
	h := newHarness(t, base)
	old, _ := h.b.Allow()
	fail(2)(h)
	wait(10 * time.Second)(h)
	ok(1)(h)
	want(closed)(h)
	old.Done(breaker.Failure) // from the first CLOSED period
	counts(0, 0, 0, 0)(h)
}

func TestDuplicateReportIsNoop(t *testing.T) {
	h := newHarness(t, breaker.Config{})
	p, _ := h.b.Allow()
	p.Done(breaker.Failure)
	p.Done(breaker.Failure)
	p.Report(breaker.Failure, 0)
	want(closed)(h)
	counts(1, 1, 0, 1)(h)

	var zero breaker.Permit // the zero Permit is inert
	zero.Done(breaker.Failure)
	zero.Report(breaker.Failure, time.Hour)
	if zero.Probe() {
		t.Fatal("zero permit is a probe")
	}
	counts(1, 1, 0, 1)(h)
}

func TestReportUsesCallerElapsed(t *testing.T) {
	h := newHarness(t, slowOnly)
	for _, d := range []time.Duration{time.Second, 2 * time.Second, time.Millisecond, 0} {
		p, _ := h.b.Allow()
		p.Report(breaker.Success, d) // the clock does not move
	}
	want(open)(h)
}

func TestUnknownOutcomeIsIgnored(t *testing.T) {
	h := newHarness(t, breaker.Config{FailureThreshold: 1})
	p, _ := h.b.Allow()
	p.Done(breaker.Outcome(200))
	want(closed)(h)
	counts(0, 0, 0, 0)(h)
	if s := breaker.Outcome(200).String(); s != "Outcome(200)" {
		t.Fatalf("String = %q", s)
	}
}

func TestGenerationAndCallbacks(t *testing.T) {
	h := newHarness(t, base)
	gens := []uint64{h.b.Snapshot().Generation}
	step := func(s step) {
		s(h)
		gens = append(gens, h.b.Snapshot().Generation)
	}
	step(fail(2))                // closed > open
	step(wait(10 * time.Second)) // open > half_open, seen on access
	step(fail(1))                // half_open > open
	step(wait(20 * time.Second)) // open > half_open
	step(ok(1))                  // half_open > closed
	step(ok(5))                  // no change
	step(func(h *harness) { h.b.Trip() })
	step(func(h *harness) { h.b.Trip() }) // already open: no change
	step(func(h *harness) { h.b.Reset() })
	if want := []uint64{0, 1, 2, 3, 4, 5, 5, 6, 6, 7}; !slices.Equal(gens, want) {
		t.Fatalf("generations = %v, want %v", gens, want)
	}
	wantChanges := []string{
		"closed>open", "open>half_open", "half_open>open", "open>half_open",
		"half_open>closed", "closed>open", "open>closed",
	}
	if got := h.Changes(); !slices.Equal(got, wantChanges) {
		t.Fatalf("changes = %v, want %v", got, wantChanges)
	}
	s := h.b.Snapshot()
	if s.Trips != 3 || s.Name != "dep" {
		t.Fatalf("snapshot = %+v, want 3 trips", s)
	}
}

func TestTripAndReset(t *testing.T) {
	h := newHarness(t, base)
	h.b.Trip()
	openUntil(10 * time.Second)(h)
	rejects(breaker.ErrOpen)(h)
	h.clk.Advance(5 * time.Second)
	h.b.Trip() // stays open at least 10s from now
	openUntil(15 * time.Second)(h)
	h.b.Reset()
	want(closed)(h)
	fail(1)(h)
	counts(1, 1, 0, 1)(h)
	h.b.Reset() // clears counts while closed
	counts(0, 0, 0, 0)(h)

	// Reset also restores the base open duration after backoff.
	fail(2)(h)
	wait(10 * time.Second)(h)
	fail(1)(h) // 20s
	h.b.Reset()
	fail(2)(h)
	openUntil(15*time.Second + 10*time.Second)(h)
}

func TestCounters(t *testing.T) {
	h := newHarness(t, base)
	fail(2)(h)
	rejects(breaker.ErrOpen)(h)
	rejects(breaker.ErrOpen)(h)
	wait(10 * time.Second)(h)
	p, _ := h.b.Allow()
	rejects(breaker.ErrTooManyProbes)(h)
	s := h.b.Snapshot()
	if s.Rejected != 3 || s.Trips != 1 || s.ProbesInFlight != 1 || s.State != halfOpen {
		t.Fatalf("snapshot = %+v", s)
	}
	p.Done(breaker.Success)
	ok(3)(h)
	fail(1)(h)
	s = h.b.Snapshot()
	if s.Calls != 4 || s.Failures != 1 || s.FailureRate != 0.25 || s.SlowCallRate != 0 || !s.OpenUntil.IsZero() {
		t.Fatalf("snapshot = %+v", s)
	}
}

func TestListenerMayCallBack(t *testing.T) {
	clk := clock.NewManual(t0)
	var b *breaker.Breaker
	var seen []string
	b = breaker.New("re", breaker.Config{Clock: clk, OnStateChange: func(name string, from, to breaker.State) {
		seen = append(seen, name+":"+to.String()+"/"+b.State().String())
		if to == open {
			b.Reset() // a listener that changes the state again must not deadlock
		}
	}})
	for range 2 {
		p, _ := b.Allow()
		p.Done(breaker.Failure)
	}
	if want := []string{"re:open/open", "re:closed/closed"}; !slices.Equal(seen, want) {
		t.Fatalf("seen = %v, want %v", seen, want)
	}
}

func TestListenerPanicDoesNotWedge(t *testing.T) {
	var calls int
	b := breaker.New("p", breaker.Config{Clock: clock.NewManual(t0), OnStateChange: func(string, breaker.State, breaker.State) {
		calls++
		if calls == 1 {
			panic("listener")
		}
	}})
	func() {
		defer func() { _ = recover() }()
		b.Trip()
	}()
	b.Reset()
	if calls != 2 {
		t.Fatalf("listener calls = %d, want 2", calls)
	}
}

func TestConfigDefaults(t *testing.T) {
	got := breaker.New("d", breaker.Config{}).Config()
	want := breaker.Config{
		FailureThreshold: 2, Window: 20, WindowBuckets: 10, MinimumCalls: 10, FailureRate: 0.5,
		SlowCallRate: 1, OpenDuration: 30 * time.Second, OpenBackoff: 1, MaxOpenDuration: 300 * time.Second,
		HalfOpenMaxCalls: 1, SuccessThreshold: 1, ProbeTimeout: 30 * time.Second, Clock: clock.System,
	}
	if got.OnStateChange != nil || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("defaults = %+v\nwant %+v", got, want)
	}
}

func TestConfigBadValues(t *testing.T) {
	tests := []struct {
		name  string
		in    breaker.Config
		check func(c breaker.Config) bool
	}{
		{"huge window", breaker.Config{Window: math.MaxInt}, func(c breaker.Config) bool { return c.Window == breaker.MaxWindow }},
		{"negative window", breaker.Config{Window: -5}, func(c breaker.Config) bool { return c.Window == 20 }},
		{"huge buckets", breaker.Config{WindowDuration: time.Hour, WindowBuckets: math.MaxInt}, func(c breaker.Config) bool {
			return c.WindowBuckets == breaker.MaxWindowBuckets
		}},
		{"buckets finer than 1ns", breaker.Config{WindowDuration: 3, WindowBuckets: 10}, func(c breaker.Config) bool { return c.WindowBuckets == 3 }},
		{"NaN rates", breaker.Config{FailureRate: math.NaN(), SlowCallRate: math.NaN()}, func(c breaker.Config) bool {
			return c.FailureRate == 0.5 && c.SlowCallRate == 1
		}},
		{"negative rates disable", breaker.Config{FailureRate: -3, SlowCallRate: -0.1}, func(c breaker.Config) bool {
			return c.FailureRate == -1 && c.SlowCallRate == -1
		}},
		{"NaN backoff", breaker.Config{OpenBackoff: math.NaN()}, func(c breaker.Config) bool { return c.OpenBackoff == 1 }},
		{"max below open", breaker.Config{OpenDuration: time.Minute, MaxOpenDuration: time.Second}, func(c breaker.Config) bool {
			return c.MaxOpenDuration == time.Minute
		}},
		{"huge open duration", breaker.Config{OpenDuration: math.MaxInt64}, func(c breaker.Config) bool {
			return c.MaxOpenDuration == math.MaxInt64
		}},
		{"short open, probe timeout at least 1s", breaker.Config{OpenDuration: time.Millisecond}, func(c breaker.Config) bool {
			return c.ProbeTimeout == time.Second
		}},
		{"negatives", breaker.Config{MinimumCalls: -1, HalfOpenMaxCalls: -1, SuccessThreshold: -1, WindowDuration: -1, SlowCallDuration: -1},
			func(c breaker.Config) bool {
				return c.MinimumCalls == 10 && c.HalfOpenMaxCalls == 1 && c.SuccessThreshold == 1 && c.WindowDuration == 0 && c.SlowCallDuration == 0
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := breaker.New("bad", tt.in)
			if c := b.Config(); !tt.check(c) {
				t.Fatalf("config = %+v", c)
			}
			for _, o := range []breaker.Outcome{breaker.Failure, breaker.Success, breaker.Failure, breaker.Failure} {
				if p, err := b.Allow(); err == nil {
					p.Done(o)
				}
			}
			_ = b.Snapshot()
		})
	}
}

func TestStrings(t *testing.T) {
	got := []string{closed.String(), halfOpen.String(), open.String(), breaker.State(9).String(),
		breaker.Success.String(), breaker.Failure.String(), breaker.Ignored.String()}
	want := []string{"closed", "half_open", "open", "State(9)", "success", "failure", "ignored"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v", got)
	}
}

func TestListenerPanicThenListenerChange(t *testing.T) {
	// After a listener panicked, a change made by a listener must still be
	// delivered after it returns (the pending and spare queues must not end
	// up sharing one array).
	var b *breaker.Breaker
	var seen []string
	panicked := false
	b = breaker.New("p", breaker.Config{Clock: clock.NewManual(t0), OnStateChange: func(_ string, from, to breaker.State) {
		seen = append(seen, from.String()+">"+to.String())
		switch len(seen) {
		case 2:
			if !panicked {
				panicked = true
				panic("listener")
			}
		case 3:
			b.Reset() // a change made by a listener
		}
	}})
	b.Trip() // closed>open, delivered normally
	func() {
		defer func() { _ = recover() }()
		b.Reset() // open>closed: the listener panics
	}()
	b.Trip() // closed>open: the listener resets
	want := []string{"closed>open", "open>closed", "closed>open", "open>closed"}
	if !slices.Equal(seen, want) {
		t.Fatalf("listener saw %v, want %v (state %v)", seen, want, b.State())
	}
}

func TestListenerPanicKeepsRestOfBatch(t *testing.T) {
	// Changes queued behind the one whose listener panicked are delivered
	// with the next delivery, first and in order, not dropped.
	var b *breaker.Breaker
	var seen []string
	b = breaker.New("p", breaker.Config{Clock: clock.NewManual(t0), OnStateChange: func(_ string, from, to breaker.State) {
		seen = append(seen, from.String()+">"+to.String())
		switch len(seen) {
		case 1:
			b.Reset() // queued behind this change: one batch of two
			b.Trip()
		case 2:
			panic("listener")
		}
	}})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the listener's panic did not reach the caller")
			}
		}()
		b.Trip()
	}()
	b.Reset()
	want := []string{"closed>open", "open>closed", "closed>open", "open>closed"}
	if !slices.Equal(seen, want) {
		t.Fatalf("listener saw %v, want %v", seen, want)
	}
}
