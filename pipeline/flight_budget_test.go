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
	type out struct {
		res  *Result
		err  error
		took time.Duration
	}
	earlyDone := make(chan out, 1)
	go func() {
		start := time.Now()
		res, err := p.Ask(early, q)
		earlyDone <- out{res, err, time.Since(start)}
	}()
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
