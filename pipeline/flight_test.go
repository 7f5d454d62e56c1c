package pipeline

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

func TestSingleflightSharesOneRun(t *testing.T) {
	release := make(chan struct{})
	primary := tier("primary", tiers.SourcePrimary, func(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
		<-release
		return tiers.Answer{Text: "one"}, nil
	})
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: primary}}})
	const n = 8
	var wg sync.WaitGroup
	results := make([]*Result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := []string{"Where is my order?", "  where IS my   order?  "}[i%2]
			results[i] = ask(t, p, q)
		}()
	}
	// Wait until every caller is inside the flight: one run holds it.
	for primary.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if c := primary.calls.Load(); c != 1 {
		t.Fatalf("primary called %d times, want 1", c)
	}
	shared := 0
	for _, r := range results {
		if r.Text != "one" {
			t.Fatalf("result %+v", r)
		}
		if r.Shared {
			shared++
		}
	}
	if shared != n-1 {
		t.Fatalf("%d shared results, want %d", shared, n-1)
	}
	// Another tenant does not share.
	if res, _ := p.Ask(context.Background(), tiers.Query{Tenant: "other", Question: "Where is my order?"}); res.Shared {
		t.Fatal("shared across tenants")
	}
}

func TestFlightKey(t *testing.T) {
	a := flightKey(tiers.Query{Tenant: "t", Question: "  Hello\t\tWORLD  "}, false)
	if a != flightKey(tiers.Query{Tenant: "t", Question: "hello world"}, false) || a == flightKey(tiers.Query{Tenant: "u", Question: "hello world"}, false) ||
		a == flightKey(tiers.Query{Tenant: "t", Question: "hello world"}, true) || a == flightKey(tiers.Query{Tenant: "t", Question: "helloworld"}, false) {
		t.Fatalf("flight keys do not normalize as they should: %q", a)
	}
}

// TestFlightKeyHistory guards the conversation in the key: the same
// question after different histories, or alone, gets different keys; the
// same history gets the same key, and a question cannot pose as a digest.
func TestFlightKeyHistory(t *testing.T) {
	jacket := []tiers.Turn{{Role: tiers.RoleUser, Content: "I ordered a jacket"}}
	phone := []tiers.Turn{{Role: tiers.RoleUser, Content: "I ordered a phone"}}
	asAssistant := []tiers.Turn{{Role: tiers.RoleAssistant, Content: "I ordered a jacket"}}
	key := func(q string, h []tiers.Turn) string {
		return flightKey(tiers.Query{Tenant: "t", Question: q, History: h}, false)
	}
	follow := key("how long do I have?", jacket)
	for name, other := range map[string]string{
		"another history":             key("how long do I have?", phone),
		"no history":                  key("how long do I have?", nil),
		"the turn of another role":    key("how long do I have?", asAssistant),
		"the history in the question": key("h"+tiers.HistoryDigest(jacket)+"\x00how long do i have?", nil),
	} {
		if other == follow {
			t.Errorf("%s: same key %q", name, follow)
		}
	}
	if again := key("  How long do I have?", []tiers.Turn{{Role: tiers.RoleUser, Content: "I ordered a jacket"}}); again != follow {
		t.Errorf("the same conversation: key %q, want %q", again, follow)
	}
}

// TestFlightKeyNormalizes guards the singleflight key's normalization on
// both its ASCII fast path and the Unicode path.
func TestFlightKeyNormalizes(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"  How do I RETURN\tan item?\n", "how do i return an item?"},
		{"ÄPFEL\u00a0\u00a0Kaufen", "äpfel kaufen"},
		{"\u3000如何 开发票\u3000", "如何 开发票"},
		{"MiXeD Ünïcode\r\n text", "mixed ünïcode text"},
	} {
		if got, want := flightKey(tiers.Query{Tenant: "t", Question: tc.a}, false), flightKey(tiers.Query{Tenant: "t", Question: tc.b}, false); got != want {
			t.Errorf("flightKey(%q) = %q, want %q", tc.a, got, want)
		}
	}
	if flightKey(tiers.Query{Tenant: "t", Question: "a b"}, false) == flightKey(tiers.Query{Tenant: "t", Question: "ab"}, false) {
		t.Error("flightKey drops inner spaces")
	}
}

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
	if f := p.flights.m[flightKey(tiers.Query{Tenant: "acme", Question: q}, false)]; f != nil {
		return f.waiters
	}
	return 0
}

// joined reports whether a caller waits in the flight of question q.
func joined(p *Pipeline, q string) bool {
	p.flights.mu.Lock()
	defer p.flights.mu.Unlock()
	f := p.flights.m[flightKey(tiers.Query{Tenant: "acme", Question: q}, false)]
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

// joined reports whether a second caller has joined the flight of key.
func (g *flightGroup) joined(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.m[key]
	return f != nil && f.done != nil
}

// TestSharedAnswerIsReported: a question answered by joining an identical
// question's flight was answered too: the Observer hears an EventAnswered
// for it (its Result marked Shared), so that metrics count every question
// answered, not every run.
func TestSharedAnswerIsReported(t *testing.T) {
	fn, entered, release := gate("one")
	primary := tier("primary", tiers.SourcePrimary, fn)
	rec := &recorder{}
	p, _ := newTestPipeline(t, Options{Observer: rec, Tiers: []Stage{{Tier: primary, Model: true}}})

	resc := make(chan *Result, 2)
	go func() { resc <- ask(t, p, "where is my order") }()
	<-entered
	go func() { resc <- ask(t, p, "Where is my order") }()
	deadline := time.Now().Add(5 * time.Second)
	for !p.flights.joined(flightKey(tiers.Query{Tenant: "acme", Question: "where is my order"}, false)) {
		if time.Now().After(deadline) {
			t.Fatal("the second question never joined the flight")
		}
		runtime.Gosched()
	}
	close(release)
	a, b := <-resc, <-resc
	if a.Shared == b.Shared {
		t.Fatalf("shared = %v and %v, want one of each", a.Shared, b.Shared)
	}
	ans := rec.kinds(EventAnswered)
	if len(ans) != 2 {
		t.Fatalf("%d EventAnswered for 2 questions answered, want 2", len(ans))
	}
	shared := 0
	for _, e := range ans {
		if e.Tenant != "acme" || e.Result == nil || e.Result.Text != "one" {
			t.Fatalf("answered event %+v", e)
		}
		if e.Result.Shared {
			shared++
		}
	}
	if shared != 1 {
		t.Fatalf("%d answered events carry a shared result, want 1", shared)
	}
	if att := rec.kinds(EventAttempt); len(att) != 1 {
		t.Fatalf("%d attempt events, want 1 (the follower made none)", len(att))
	}
}
