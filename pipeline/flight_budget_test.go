package pipeline

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

// pausingCtx never ends. Its Err, from the call after the first
// (admission) on, and for at most pauses calls (0: all), signals at and
// waits for next: it holds a waiting caller between its flight's end and
// what it does next.
type pausingCtx struct {
	context.Context
	calls    atomic.Int32
	pauses   int32
	at, next chan struct{}
}

func newPausingCtx(pauses int32) *pausingCtx {
	return &pausingCtx{Context: context.Background(), pauses: pauses, at: make(chan struct{}), next: make(chan struct{})}
}

func (c *pausingCtx) Err() error {
	if n := c.calls.Add(1); n > 1 && (c.pauses == 0 || n <= 1+c.pauses) {
		c.at <- struct{}{}
		<-c.next
	}
	return nil
}

// waitingCtx never ends and signals the first time its Done is asked for:
// its caller is waiting in a flight.
type waitingCtx struct {
	context.Context
	once    atomic.Bool
	waiting chan struct{}
}

func (c *waitingCtx) Done() <-chan struct{} {
	if c.once.CompareAndSwap(false, true) {
		c.waiting <- struct{}{}
	}
	return c.Context.Done()
}

// waiters returns how many callers joined the flight of question q.
func waiters(p *Pipeline, q string) int {
	p.flights.mu.Lock()
	defer p.flights.mu.Unlock()
	if f := p.flights.m[flightKey("acme", q, false)]; f != nil {
		return f.waiters
	}
	return 0
}

// joined reports whether a caller waits in the flight of question q.
func joined(p *Pipeline, q string) bool {
	p.flights.mu.Lock()
	defer p.flights.mu.Unlock()
	f := p.flights.m[flightKey("acme", q, false)]
	return f != nil && f.done != nil
}

// TestFollowerKeepsItsBudgetInALaterFlight: when a flight's leader goes
// away and a caller that asked later leads the question again, a caller
// that asked earlier and joins that flight still answers within its own
// request timeout (the static tier, its budget spent), not the later
// caller's. Budgets run on real time: the waits are short.
func TestFollowerKeepsItsBudgetInALaterFlight(t *testing.T) {
	entered := make(chan struct{}, 4)
	primary := tier("primary", tiers.SourcePrimary, func(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
		entered <- struct{}{}
		return hangs(ctx, q)
	})
	const timeout = 200 * time.Millisecond
	p, _ := newTestPipeline(t, Options{RequestTimeout: timeout, Tiers: []Stage{
		{Tier: primary, Model: true}, {Tier: tiers.NewStatic("static", "sorry")}}})
	q := tiers.Query{Tenant: "acme", Question: "q"}
	lctx, lcancel := context.WithCancel(context.Background())
	defer lcancel()
	go func() { _, _ = p.Ask(lctx, q) }() // the first leader
	<-entered

	early := newPausingCtx(1)
	earlyDone := askTimed(p, early, q)
	for !joined(p, "q") {
		runtime.Gosched()
	}
	time.Sleep(3 * timeout / 4) // the early caller spends most of its budget waiting
	late := &waitingCtx{Context: context.Background(), waiting: make(chan struct{}, 1)}
	go func() { _, _ = p.Ask(late, q) }()
	<-late.waiting // the later caller waits in the first flight too
	lcancel()      // the first leader's caller goes away
	<-early.at     // the early caller saw the flight end...
	<-entered      // ...and the later caller leads the question again
	early.next <- struct{}{}
	o := <-earlyDone
	if o.err != nil || o.res.Source != tiers.SourceStatic {
		t.Fatalf("early caller: res %+v, err %v", o.res, o.err)
	}
	if o.took > timeout+timeout/4 {
		t.Fatalf("the early caller took %v with a request timeout of %v", o.took, timeout)
	}
}

// TestFollowerNeverGetsAnotherCallersCancel: a waiting caller whose
// context never ends does not return context.Canceled when the leaders of
// its flight keep going away: after a few tries it runs the question
// alone.
func TestFollowerNeverGetsAnotherCallersCancel(t *testing.T) {
	entered := make(chan struct{}, 4)
	primary := tier("primary", tiers.SourcePrimary, func(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
		if ctx.Value(followerKey{}) == nil { // a leader's call hangs
			entered <- struct{}{}
			return hangs(ctx, q)
		}
		return tiers.Answer{Text: "primary"}, nil
	})
	p, _ := newTestPipeline(t, Options{RequestTimeout: time.Minute, Tiers: []Stage{
		{Tier: primary, Model: true}, {Tier: tier("static", tiers.SourceStatic, answers("sorry"))}}})
	q := tiers.Query{Tenant: "acme", Question: "q"}
	leader := func() context.CancelFunc {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _, _ = p.Ask(ctx, q) }()
		<-entered
		return cancel
	}
	follower := newPausingCtx(0)
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	cancel := leader()
	go func() {
		res, err := p.Ask(context.WithValue(follower, followerKey{}, true), q)
		done <- out{res, err}
	}()
	for i := 0; i < 3; i++ {
		for !joined(p, "q") {
			runtime.Gosched()
		}
		cancel()      // this leader's caller goes away
		<-follower.at // the follower saw the flight end
		if i < 2 {
			cancel = leader()
		}
		follower.next <- struct{}{}
	}
	go func() { // the follower's later checks of its context
		for range follower.at {
			follower.next <- struct{}{}
		}
	}()
	o := <-done
	close(follower.at)
	if o.err != nil || o.res.Source != tiers.SourcePrimary || o.res.Shared {
		t.Fatalf("follower whose context never ended: res %+v, err %v", o.res, o.err)
	}
}

type followerKey struct{}

// TestStreamPanicIsAnError: a panic in a streamed question's run outside
// a tier call is returned as an error, as Ask returns it.
func TestStreamPanicIsAnError(t *testing.T) {
	miss := tier("memory", tiers.SourceCache, func(context.Context, tiers.Query) (tiers.Answer, error) {
		return tiers.Answer{}, &tiers.Error{Kind: tiers.KindMiss, Tier: "memory"}
	})
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: panickyRememberer{miss}}, {Tier: tiers.NewStatic("static", "sorry")}}})
	res, err := p.Stream(context.Background(), tiers.Query{Tenant: "acme", Question: "q"}, func(StreamEvent) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "remember exploded") || res != nil {
		t.Fatalf("res %+v, err %v", res, err)
	}
}

type cancelKey struct{}

// TestFollowersShareAfterCanceledLeaders: when the callers of several
// leaders in a row go away, the callers still waiting join the question
// again and share one run: one upstream call, not one each.
func TestFollowersShareAfterCanceledLeaders(t *testing.T) {
	var (
		calls, inflight, peak atomic.Int32
		p                     *Pipeline
	)
	gate := make(chan struct{})
	primary := tier("primary", tiers.SourcePrimary, func(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
		n := calls.Add(1)
		if n <= 3 { // the callers of the first three leaders go away
			if n == 1 {
				<-gate
			}
			for waiters(p, "q") < 8-int(n) { // the other callers wait in this flight
				runtime.Gosched()
			}
			ctx.Value(cancelKey{}).(context.CancelFunc)()
			<-ctx.Done()
			return tiers.Answer{}, ctx.Err()
		}
		c := inflight.Add(1)
		for p := peak.Load(); c > p && !peak.CompareAndSwap(p, c); p = peak.Load() {
		}
		time.Sleep(20 * time.Millisecond) // long enough for a second run to overlap
		inflight.Add(-1)
		return tiers.Answer{Text: "primary"}, nil
	})
	p, _ = newTestPipeline(t, Options{RequestTimeout: time.Minute, Tiers: []Stage{
		{Tier: primary, Model: true}, {Tier: tiers.NewStatic("static", "sorry")}}})
	q := tiers.Query{Tenant: "acme", Question: "q"}
	askOnce := func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, _ = p.Ask(context.WithValue(ctx, cancelKey{}, cancel), q)
	}
	go askOnce()
	for calls.Load() == 0 {
		runtime.Gosched()
	}
	waiting := make([]*waitingCtx, 7)
	done := make(chan struct{}, len(waiting))
	for i := range waiting {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		waiting[i] = &waitingCtx{Context: context.WithValue(ctx, cancelKey{}, cancel), waiting: make(chan struct{}, 1)}
		go func() {
			defer func() { done <- struct{}{} }()
			_, _ = p.Ask(waiting[i], q)
		}()
		<-waiting[i].waiting // it waits in the first flight
	}
	close(gate)
	for range waiting {
		<-done
	}
	if n := calls.Load() - 3; n != 1 || peak.Load() != 1 {
		t.Fatalf("the callers left waiting made %d upstream calls (%d at once), want 1 shared run", n, peak.Load())
	}
}

// TestStreamReceiverPanicStopsTheStream: a panic in Stream's fn while a
// model streams is the receiver's error: the stream stops, Stream returns
// it with its stack, the model's breaker hears nothing and no other model
// is called.
func TestStreamReceiverPanicStopsTheStream(t *testing.T) {
	r := newStreamRig(t, StreamConfig{}, nil)
	res, err := r.p.Stream(context.Background(), streamQuery(), func(e StreamEvent) error {
		if e.Kind == StreamDelta {
			panic("receiver exploded")
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "receiver exploded") || res != nil {
		t.Fatalf("res %+v, err %v", res, err)
	}
	if got := r.modelCounts(streamA); got != "0/0" {
		t.Errorf("model a's breaker heard %s (failures/calls) for the receiver's panic", got)
	}
	if n := r.srv.Stats(streamB).StreamCalls; n != 0 {
		t.Errorf("model b was called %d times", n)
	}
}
