package pipeline

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

func TestBulkheadRejects(t *testing.T) {
	fn, entered, release := gate("slow")
	slow := tier("primary", tiers.SourcePrimary, fn)
	rec := &recorder{}
	p, _ := newTestPipeline(t, Options{Observer: rec, Tiers: []Stage{
		{Tier: slow, Bulkhead: &BulkheadConfig{MaxConcurrent: 1, MaxQueue: 1, QueueTimeout: 20 * time.Millisecond}},
		{Tier: tier("static", tiers.SourceStatic, answers("sorry"))}}})

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if res := ask(t, p, "first"); res.Text != "slow" {
			t.Errorf("first = %+v", res)
		}
	}()
	<-entered
	res := ask(t, p, "second") // queues, times out after 20ms
	close(release)
	wg.Wait()
	if got := outcomes(res); !slices.Equal(got, []string{"primary:bulkhead_full", "static:success"}) {
		t.Fatalf("attempts = %v", got)
	}
	if ev := rec.kinds(EventBulkheadRejected); len(ev) != 1 || ev[0].Tier != "primary" {
		t.Fatalf("bulkhead events = %+v", ev)
	}
	if st := p.Status().Bulkheads; len(st) != 1 || st[0].Rejected != 1 || st[0].InFlight != 0 || st[0].MaxConcurrent != 1 {
		t.Fatalf("status = %+v", st)
	}
}

// TestBulkheadCallerLeavesQueue: a caller that goes away while waiting in
// a bulkhead's queue was not turned away by the bulkhead: no
// EventBulkheadRejected, no rejection in Status, no bulkhead_full attempt;
// the queue slot is given back.
func TestBulkheadCallerLeavesQueue(t *testing.T) {
	fn, entered, release := gate("slow")
	slow := tier("primary", tiers.SourcePrimary, fn)
	rec := &recorder{}
	p, _ := newTestPipeline(t, Options{Observer: rec, RequestTimeout: time.Minute, Tiers: []Stage{
		{Tier: slow, Bulkhead: &BulkheadConfig{MaxConcurrent: 1, MaxQueue: 1, QueueTimeout: time.Minute}},
		{Tier: tier("static", tiers.SourceStatic, answers("sorry"))}}})

	var wg sync.WaitGroup
	wg.Go(func() { ask(t, p, "first") })
	<-entered

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Ask(ctx, tiers.Query{Tenant: "acme", Question: "second"})
		errc <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for p.Status().Bulkheads[0].Queued != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the second question never queued")
		}
		runtime.Gosched()
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Ask = %v, want context.Canceled", err)
	}
	close(release)
	wg.Wait()

	if ev := rec.kinds(EventBulkheadRejected); len(ev) != 0 {
		t.Errorf("a caller leaving the queue was reported as a bulkhead rejection: %+v", ev)
	}
	for _, e := range rec.kinds(EventAttempt) {
		if e.Attempt.Outcome == outcomeBulkheadFull {
			t.Errorf("attempt %+v: the caller left, the bulkhead was not full past its queue timeout", e.Attempt)
		}
	}
	if st := p.Status().Bulkheads[0]; st.Rejected != 0 || st.Queued != 0 || st.InFlight != 0 {
		t.Errorf("status = %+v, want nothing rejected, queued or in flight", st)
	}
}

// TestBulkheadQueueKeepsTheTimeLimit: the time a call waits in a
// bulkhead's queue is not taken from its time limit (breaker, bulkhead,
// then time limiter): a queued call to a healthy tier gets the tier's
// whole timeout when it leaves the queue, and its breaker hears no
// timeout the queue caused. The queue wait runs on real time, as time
// limits do; it is kept short.
func TestBulkheadQueueKeepsTheTimeLimit(t *testing.T) {
	const timeout, queued = 200 * time.Millisecond, 100 * time.Millisecond
	fn, entered, release := gate("first")
	var calls atomic.Int32
	primary := tier("primary", tiers.SourcePrimary, func(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
		if calls.Add(1) == 1 {
			return fn(ctx, q)
		}
		return tiers.Answer{Text: "second"}, nil
	})
	p, _ := newTestPipeline(t, Options{RequestTimeout: time.Minute, Tiers: []Stage{
		{Tier: primary, Model: true, Timeout: timeout,
			Bulkhead: &BulkheadConfig{MaxConcurrent: 1, MaxQueue: 1, QueueTimeout: time.Minute}},
		{Tier: tier("static", tiers.SourceStatic, answers("sorry"))}}})

	var wg sync.WaitGroup
	wg.Go(func() { ask(t, p, "first") })
	<-entered
	got := make(chan *Result, 1)
	go func() { got <- ask(t, p, "second") }()
	deadline := time.Now().Add(5 * time.Second)
	for p.Status().Bulkheads[0].Queued != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the second question never queued")
		}
		runtime.Gosched()
	}
	time.Sleep(queued)
	close(release)
	res := <-got
	wg.Wait()

	if res.Source != tiers.SourcePrimary {
		t.Fatalf("the queued question was answered by %s: %v", res.Source, outcomes(res))
	}
	given := primary.given()
	if g := given[len(given)-1]; g < timeout-queued/2 {
		t.Errorf("the queued call was given %v of its %v time limit", g, timeout)
	}
}
