package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

// TestSingleflightFollowerKeepsItsDeadline: a caller that joins another's
// flight with a shorter deadline returns at its own deadline, not when the
// leader's run ends (DESIGN: a shorter client deadline is never exceeded).
func TestSingleflightFollowerKeepsItsDeadline(t *testing.T) {
	fn, entered, release := gate("one")
	primary := tier("primary", tiers.SourcePrimary, fn)
	p, _ := newTestPipeline(t, Options{RequestTimeout: 10 * time.Second, Tiers: []Stage{{Tier: primary}}})
	leaderDone := make(chan error, 1)
	go func() {
		_, err := p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: "q"})
		leaderDone <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	follower := askTimed(p, ctx, tiers.Query{Tenant: "acme", Question: "q"})
	var o timedAsk
	select {
	case o = <-follower:
	case <-time.After(2 * time.Second):
		close(release)
		o = <-follower
		<-leaderDone
		t.Fatalf("the follower with a 50ms deadline waited for the leader's run (%v): res=%+v err=%v", o.took, o.res, o.err)
	}
	close(release)
	if err := <-leaderDone; err != nil {
		t.Fatalf("leader: %v", err)
	}
	if !errors.Is(o.err, context.DeadlineExceeded) || o.res != nil {
		t.Fatalf("follower: res=%+v err=%v", o.res, o.err)
	}
	if c := primary.calls.Load(); c != 1 {
		t.Fatalf("primary called %d times", c)
	}
}

// TestSingleflightRetryKeepsTheBudget: when the leader's caller goes away
// and a waiting caller runs the question again, that run has what is left
// of the waiting caller's budget, not a whole new one: the request timeout
// counts from the caller's question.
func TestSingleflightRetryKeepsTheBudget(t *testing.T) {
	entered := make(chan struct{}, 4)
	primary := tier("primary", tiers.SourcePrimary, func(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
		entered <- struct{}{}
		return hangs(ctx, q)
	})
	static := tier("static", tiers.SourceStatic, answers("sorry"))
	const timeout = 400 * time.Millisecond
	p, _ := newTestPipeline(t, Options{RequestTimeout: timeout, Tiers: []Stage{{Tier: primary, Model: true}, {Tier: static}}})
	lctx, lcancel := context.WithCancel(context.Background())
	defer lcancel()
	go func() { _, _ = p.Ask(lctx, tiers.Query{Tenant: "acme", Question: "q"}) }()
	<-entered
	start := time.Now()
	done := make(chan struct{})
	var (
		res *Result
		err error
	)
	go func() {
		defer close(done)
		res, err = p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: "q"})
	}()
	time.Sleep(timeout / 2) // the follower waits in the flight
	lcancel()
	<-done
	took := time.Since(start)
	if err != nil || res.Source != tiers.SourceStatic {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	if took > timeout+timeout/4 {
		t.Fatalf("the follower took %v with a request timeout of %v", took, timeout)
	}
}

// panickyRememberer is a cache tier that misses and panics when it is
// told an answer: a bug outside the tiers' calls.
type panickyRememberer struct{ *fakeTier }

func (panickyRememberer) Remember(context.Context, tiers.Query, tiers.Answer) {
	panic("remember exploded")
}

// TestRunPanicIsAnError: a panic in a question's run outside a tier call
// ends that question with an error, whether the run went on the caller's
// goroutine (a context that cannot end) or on a flight's own (one that
// can), and the pipeline answers the next question.
func TestRunPanicIsAnError(t *testing.T) {
	miss := tier("memory", tiers.SourceCache, func(context.Context, tiers.Query) (tiers.Answer, error) {
		return tiers.Answer{}, &tiers.Error{Kind: tiers.KindMiss, Tier: "memory", Err: errors.New("miss")}
	})
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: panickyRememberer{miss}}, {Tier: tier("static", tiers.SourceStatic, answers("sorry"))}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []context.Context{context.Background(), ctx} {
		res, err := p.Ask(c, tiers.Query{Tenant: "acme", Question: "q"})
		if err == nil || !strings.Contains(err.Error(), "remember exploded") || res != nil {
			t.Fatalf("res=%+v err=%v", res, err)
		}
	}
}

// timedAsk is what askTimed's question came to, and how long it took.
type timedAsk struct {
	res  *Result
	err  error
	took time.Duration
}

// askTimed asks q of p on a goroutine of its own and delivers the outcome.
func askTimed(p *Pipeline, ctx context.Context, q tiers.Query) <-chan timedAsk {
	done := make(chan timedAsk, 1)
	go func() {
		start := time.Now()
		res, err := p.Ask(ctx, q)
		done <- timedAsk{res, err, time.Since(start)}
	}()
	return done
}
