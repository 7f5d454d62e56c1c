package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// TestHungModelTripsBeforeTierTimeout: when the primary hangs under load,
// its breaker trips once MinimumCalls calls have been in flight for
// SlowCallDuration, while they still wait for the tier's timeout, and the
// next question goes straight to the fallback.
func TestHungModelTripsBeforeTierTimeout(t *testing.T) {
	const hung = 4
	primary := tier("primary", tiers.SourcePrimary, hangs)
	fallback := tier("fallback", tiers.SourceFallback, answers("fallback"))
	p, clk := newTestPipeline(t, Options{
		RequestTimeout: time.Minute,
		Tiers: []Stage{
			{Tier: primary, Model: true, Timeout: 30 * time.Second, Breaker: breaker.Config{
				FailureThreshold: -1, MinimumCalls: hung, SlowCallDuration: 2 * time.Second, SlowCallRate: 0.5,
				OpenDuration: time.Minute,
			}},
			{Tier: fallback, Model: true},
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range hung {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = p.Ask(ctx, tiers.Query{Tenant: "acme", Question: fmt.Sprint("hung question ", i)})
		}()
	}
	defer wg.Wait()
	defer cancel() // ends the hung calls: their late outcomes are ignored
	deadline := time.Now().Add(5 * time.Second)
	for primary.calls.Load() < hung {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d questions reached the primary", primary.calls.Load(), hung)
		}
		time.Sleep(time.Millisecond)
	}

	b := p.Breakers().Get("tier/primary")
	clk.Advance(1900 * time.Millisecond)
	if s := b.Snapshot(); s.State != breaker.StateClosed || s.SlowInFlight != 0 {
		t.Fatalf("before slow_call_duration: %v with %d slow in flight, want closed, 0", s.State, s.SlowInFlight)
	}
	clk.Advance(400 * time.Millisecond) // 2.3s after the calls started; the tier timeout is 30s
	start := time.Now()
	res := ask(t, p, "next question")
	if got := outcomes(res); !slices.Equal(got, []string{"primary:breaker_open", "fallback:success"}) {
		t.Fatalf("attempts of the next question = %v, want the primary skipped", got)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the next question took %v", took)
	}
	lt := b.LastTrip()
	if b.State() != breaker.StateOpen || lt.Cause != breaker.CauseSlowCallRate || lt.Kind != "slow_in_flight" {
		t.Fatalf("tier/primary %v, last trip %+v; want open on slow_in_flight", b.State(), lt)
	}
	if n := primary.calls.Load(); n != hung {
		t.Fatalf("primary called %d times, want %d", n, hung)
	}
}
