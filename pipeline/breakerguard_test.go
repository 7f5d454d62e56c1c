package pipeline

import (
	"context"
	"fmt"
	"runtime"
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
	entered := make(chan struct{}, hung)
	primary := tier("primary", tiers.SourcePrimary, hangsAfter(entered))
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
	for range hung {
		<-entered // every hung call has reached the primary
	}

	b := p.Breakers().Get("tier/primary")
	clk.Advance(1900 * time.Millisecond)
	if s := b.Snapshot(); s.State != breaker.StateClosed || s.SlowInFlight != 0 {
		t.Fatalf("before slow_call_duration: %v with %d slow in flight, want closed, 0", s.State, s.SlowInFlight)
	}
	clk.Advance(400 * time.Millisecond) // 2.3s after the calls started; the tier timeout is 30s
	res := ask(t, p, "next question")
	if got := outcomes(res); !slices.Equal(got, []string{"primary:breaker_open", "fallback:success"}) {
		t.Fatalf("attempts of the next question = %v, want the primary skipped", got)
	}
	lt := b.LastTrip()
	if b.State() != breaker.StateOpen || lt.Cause != breaker.CauseSlowCallRate || lt.Kind != "slow_in_flight" {
		t.Fatalf("tier/primary %v, last trip %+v; want open on slow_in_flight", b.State(), lt)
	}
	if n := primary.calls.Load(); n != hung {
		t.Fatalf("primary called %d times, want %d", n, hung)
	}
}

// hangsAfter is hangs, reporting each call on entered first.
func hangsAfter(entered chan<- struct{}) func(context.Context, tiers.Query) (tiers.Answer, error) {
	return func(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
		entered <- struct{}{}
		return hangs(ctx, q)
	}
}

// TestQueuedCallsAreNotSlowInFlight: calls waiting in the tier's bulkhead
// queue have not reached the tier. With one call hung at the tier and
// four queued behind max_concurrent 1, a breaker that needs four slow
// calls stays closed past slow_call_duration, and the queued calls whose
// callers give up count nowhere.
func TestQueuedCallsAreNotSlowInFlight(t *testing.T) {
	const queued = 4
	entered := make(chan struct{}, 1+queued)
	primary := tier("primary", tiers.SourcePrimary, hangsAfter(entered))
	p, clk := newTestPipeline(t, Options{
		RequestTimeout: time.Minute,
		Tiers: []Stage{
			{Tier: primary, Timeout: 30 * time.Second,
				Bulkhead: &BulkheadConfig{MaxConcurrent: 1, MaxQueue: queued, QueueTimeout: time.Minute},
				Breaker: breaker.Config{FailureThreshold: -1, MinimumCalls: queued, SlowCallDuration: 2 * time.Second,
					SlowCallRate: 0.5, OpenDuration: time.Minute}},
			{Tier: tier("static", tiers.SourceStatic, answers("sorry"))},
		},
	})
	hungCtx, stopHung := context.WithCancel(context.Background())
	queueCtx, leaveQueue := context.WithCancel(context.Background())
	defer stopHung()
	defer leaveQueue()
	var wg, queuedWG sync.WaitGroup
	wg.Go(func() { _, _ = p.Ask(hungCtx, tiers.Query{Tenant: "acme", Question: "hung question"}) })
	<-entered
	for i := range queued {
		queuedWG.Go(func() {
			_, _ = p.Ask(queueCtx, tiers.Query{Tenant: "acme", Question: fmt.Sprint("queued question ", i)})
		})
	}
	for p.Status().Bulkheads[0].Queued != queued {
		runtime.Gosched()
	}

	b := p.Breakers().Get("tier/primary")
	clk.Advance(3 * time.Second)
	if s := b.Snapshot(); s.State != breaker.StateClosed || s.SlowInFlight != 1 {
		t.Fatalf("queued past slow_call_duration: %v with %d slow in flight, want closed, 1", s.State, s.SlowInFlight)
	}
	leaveQueue()
	queuedWG.Wait()
	if s := b.Snapshot(); s.State != breaker.StateClosed || s.Calls != 1 || s.SlowCalls != 1 {
		t.Fatalf("after the queued callers left: %v, %d calls, %d slow; want closed, 1, 1 (the hung call)",
			s.State, s.Calls, s.SlowCalls)
	}
	stopHung()
	wg.Wait()
	if n := primary.calls.Load(); n != 1 {
		t.Fatalf("primary called %d times, want 1", n)
	}
}
