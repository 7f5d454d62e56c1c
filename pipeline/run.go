package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// Ask runs q through the tiers and returns the first answer. It returns an
// error only when ctx ends before an answer (ctx.Err(), unchanged), when a
// rate limit refuses q with on_limit: reject (ErrRejected), after Close
// (ErrClosed), or when no tier answered (ErrExhausted, with the Result
// listing the attempts), which a pipeline ending in a static tier never
// does. A panic in the pipeline's own code (the tiers' are caught where
// they are called) is returned as an error with its stack, not raised.
func (p *Pipeline) Ask(ctx context.Context, q tiers.Query) (*Result, error) {
	start := time.Now() // the budget counts from here, waits in a flight included
	degraded, err := p.admit(ctx, q)
	if err != nil {
		return nil, err
	}
	key := flightKey(q.Tenant, q.Question, degraded)
	r := new(run) // holds the flight too, if this caller leads it
	// Identical questions in flight share one run. The leader runs it on
	// its caller's goroutine; the others wait for it, each no longer than its
	// own context and budget. A flight whose leader's caller went away ends
	// canceled; the callers still waiting then join the question again (one
	// of them leading a new flight), each within what is left of its own
	// budget.
	for {
		f, done := p.flights.join(key, &r.flight)
		if done == nil {
			res, err := p.lead(ctx, r, q, degraded, start)
			p.flights.end(key, f, res, err)
			return res, err
		}
		waited := p.wait(ctx, done, start)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !waited {
			// The flight outlasted this caller's budget (its leader asked
			// later): the caller runs the question alone, with what is
			// left of its own budget.
			return p.lead(ctx, r, q, degraded, start)
		}
		if isContextErr(f.err) {
			continue
		}
		res := shared(f.res)
		if f.err == nil && res != nil {
			// This question was answered too, by the flight's run.
			p.emit(Event{Kind: EventAnswered, Tenant: q.Tenant, Tier: string(res.Source), Result: res})
		}
		return res, f.err
	}
}

// wait waits for done, a flight's end, no longer than ctx and the budget
// of a question asked at start. It reports whether the flight ended.
func (p *Pipeline) wait(ctx context.Context, done <-chan struct{}, start time.Time) bool {
	var budgetOver <-chan time.Time
	if d, ok := ctx.Deadline(); !ok || d.After(start.Add(p.timeout)) {
		// The request timeout ends the budget before ctx does.
		t := time.NewTimer(time.Until(start.Add(p.timeout)))
		defer t.Stop()
		budgetOver = t.C
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
	case <-budgetOver:
	}
	return false
}

// flightGroup holds the questions in flight by flight key. It stands in
// for golang.org/x/sync/singleflight, whose Do cannot be left by a caller
// whose context ends, and whose DoChan puts every run on a goroutine of
// its own: that cost a cache hit through the API 6 allocations and half
// as much time again (BenchmarkAskCacheHit in package api).
type flightGroup struct {
	mu sync.Mutex
	m  map[string]*flight
}

// flight is one run shared by the callers of one key. res and err are
// written before done is closed.
type flight struct {
	done    chan struct{} // made when a second caller joins
	waiters int           // the callers that joined it
	res     *Result
	err     error
}

// join returns the flight of key. done is nil when the caller starts the
// flight, with mine (a new flight), and must run it and end it; otherwise
// done is closed when the flight ends.
func (g *flightGroup) join(key string, mine *flight) (f *flight, done <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f = g.m[key]; f != nil {
		if f.done == nil {
			f.done = make(chan struct{})
		}
		f.waiters++
		return f, f.done
	}
	if g.m == nil {
		g.m = make(map[string]*flight)
	}
	g.m[key] = mine
	return mine, nil
}

// end ends flight f of key with its run's outcome.
func (g *flightGroup) end(key string, f *flight, res *Result, err error) {
	g.mu.Lock()
	f.res, f.err = res, err
	delete(g.m, key)
	done := f.done
	g.mu.Unlock()
	if done != nil {
		close(done)
	}
}

// lead runs q as the leader of its flight. A panic (a bug of the
// pipeline's: the tiers' panics are caught where they are called) ends the
// question with an error, and its flight with it.
func (p *Pipeline) lead(ctx context.Context, r *run, q tiers.Query, degraded bool, start time.Time) (res *Result, err error) {
	defer aborted(&res, &err)
	if !p.inflight.enter() {
		return nil, ErrClosed
	}
	defer p.inflight.leave()
	return p.run(ctx, r, q, degraded, start)
}

// aborted, deferred, turns a panic of the pipeline's own code into the
// question's error, with its stack.
func aborted(res **Result, err *error) {
	if e := recover(); e != nil {
		*res, *err = nil, fmt.Errorf("pipeline: question aborted: %v\n%s", e, debug.Stack())
	}
}

// admit lets q in, or refuses it: when ctx is done (ctx.Err()), after
// Close (ErrClosed), or over a rate limit with on_limit: reject
// (ErrRejected). degraded is true when q is over a rate limit and must
// skip the model tiers.
func (p *Pipeline) admit(ctx context.Context, q tiers.Query) (degraded bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if p.inflight.closed() {
		return false, ErrClosed
	}
	if reason := p.limits.admitNow(ctx, q.Tenant, p.clock); reason != "" {
		p.emit(Event{Kind: EventRateLimited, Tenant: q.Tenant, Reason: reason})
		if p.onLimit == OnLimitReject {
			return false, ErrRejected
		}
		return true, nil
	}
	return false, nil
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// shared returns a copy of r for a caller that joined another's flight.
func shared(r *Result) *Result {
	if r == nil {
		return nil
	}
	c := *r
	c.Shared = true
	c.Attempts = append([]Attempt(nil), r.Attempts...)
	return &c
}

// run is one question's way down the tiers. The attempts are guarded by mu
// because a tier may report candidate attempts from its own goroutines.
type run struct {
	p      *Pipeline
	tenant string
	res    Result // the result, allocated with the run

	mu       sync.Mutex
	stage    *stage    // the stage being called; set before each call
	attempts []Attempt // backed by buf while it fits
	buf      [2]Attempt
	cand     candidateCall // the candidate call under way, if any
	release  func(error, tiers.Usage)

	// Allocated with the run: the question's Memo, the context that
	// carries the run as the candidates' guard and the Memo's embedder.
	memo tiers.Memo
	gctx tiers.GuardContext
	emb  callerEmbedder // the Memo's embedder when it is guarded

	flight flight // the run's flight, when its caller leads one
}

var _ tiers.CandidateGuard = (*run)(nil)

func (r *run) record(a Attempt) { r.settle(nil, a) }

// settle records attempt a and, if cc is not nil, empties that candidate
// call for the next one, under one lock.
func (r *run) settle(cc *candidateCall, a Attempt) {
	r.mu.Lock()
	if cc != nil {
		*cc = candidateCall{}
	}
	r.attempts = append(r.attempts, a)
	r.mu.Unlock()
	r.p.emit(Event{Kind: EventAttempt, Tenant: r.tenant, Tier: a.Tier, Attempt: a})
}

func (r *run) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.attempts)
}

// run runs q through the stages: breaker, bulkhead, time limiter, tier.
// The budget counts from start, when the caller asked.
func (p *Pipeline) run(ctx context.Context, r *run, q tiers.Query, degraded bool, start time.Time) (*Result, error) {
	b := p.newBudget(ctx, start)
	gctx, q := p.startRun(r, ctx, q)
	last := len(p.stages) - 1
	for i, s := range p.stages {
		now := time.Now()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if degraded && s.Model {
			r.record(Attempt{Tier: s.name, Outcome: OutcomeQuota})
			continue
		}
		limit := b.limit(s, now)
		if limit <= 0 && i != last {
			r.record(Attempt{Tier: s.name, Outcome: OutcomeBudgetExhausted})
			continue
		}
		a, err, ok := p.try(ctx, gctx, r, s, q, b, now, limit, nil)
		if !ok {
			continue
		}
		if err == nil {
			return p.answered(ctx, r, q, a, start, true), nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	r.res = Result{Attempts: r.attempts, Duration: time.Since(start)}
	return &r.res, ErrExhausted
}

// startRun starts r, a new run, as the run of q: its attempt record, the
// context carrying the run as the model candidates' guard, and q with a
// Memo.
func (p *Pipeline) startRun(r *run, ctx context.Context, q tiers.Query) (context.Context, tiers.Query) {
	r.p, r.tenant = p, q.Tenant
	r.attempts = r.buf[:0]
	if q.Memo == nil && (p.memoK > 0 || p.embedder != nil || p.kb != nil) {
		r.memo.K, r.memo.Embedder = p.memoK, p.embedder
		if g, ok := p.embedder.(*guardedEmbedder); ok {
			r.emb = callerEmbedder{g: g, caller: ctx}
			r.memo.Embedder = &r.emb
		}
		q.Memo = &r.memo
	}
	if p.kb != nil {
		// The version the question starts on, whichever tier asks first:
		// an answer built while the knowledge base is reloaded is not
		// cached under the new version, even when the cache tier was
		// skipped before it.
		q.Memo.KBVersion(p.kb.Version)
	}
	if !p.guarded {
		return ctx, q
	}
	r.gctx = tiers.GuardContext{Context: ctx, Guard: r}
	return &r.gctx, q
}

// budget is the time of one question: its deadline, and its length next
// to the request timeout, by which the reserves of later tiers shrink.
type budget struct {
	deadline       time.Time
	total, timeout time.Duration
}

// newBudget returns the budget of a question started at start: the
// request timeout, or the caller's shorter deadline.
func (p *Pipeline) newBudget(ctx context.Context, start time.Time) budget {
	deadline := start.Add(p.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return budget{deadline: deadline, total: deadline.Sub(start), timeout: p.timeout}
}

// limit returns the time limit of a call of s made at now: min(its
// timeout, the time left less the reserves of the stages after it).
func (b budget) limit(s *stage, now time.Time) time.Duration {
	limit := b.left(s, now)
	if s.Timeout > 0 && s.Timeout < limit {
		limit = s.Timeout
	}
	return limit
}

// left returns the time left to s at now: the time left less the reserves
// of the stages after it.
func (b budget) left(s *stage, now time.Time) time.Duration {
	after := s.after
	if b.total < b.timeout { // a caller's shorter deadline shrinks the reserves alike
		after = time.Duration(float64(after) * float64(b.total) / float64(b.timeout))
	}
	return b.deadline.Sub(now) - after
}

// try calls stage s under its guards: breaker, bulkhead, time limiter.
// The time limiter cancels the call limit (b's limit of s at now) after
// it starts; a call that queued in the bulkhead gets its limit when it
// leaves the queue. ok is false when s was skipped. With a stream request
// sr, a tier that streams (tiers.StreamTier) is asked to stream; the
// breakers hear the outcome when the stream ends.
func (p *Pipeline) try(ctx, gctx context.Context, r *run, s *stage, q tiers.Query, b budget, now time.Time, limit time.Duration, sr *tiers.StreamRequest) (a tiers.Answer, err error, ok bool) {
	permit, berr := s.breaker.Allow()
	if berr != nil && !s.lastResort {
		r.record(Attempt{Tier: s.name, Outcome: OutcomeBreakerOpen})
		return a, nil, false
	}
	// A static tier is called even when its breaker is open (permit is
	// then the zero Permit, whose reports are no-ops).
	t0 := now // the call's time counts from the guards on
	if s.bulk != nil {
		if !p.enqueue(ctx, r, s, b, now) {
			permit.Done(breaker.Ignored)
			return a, nil, false
		}
		defer s.bulk.release()
		t0 = time.Now() // not the time in the queue
		if limit = b.limit(s, t0); limit <= 0 && s != p.stages[len(p.stages)-1] {
			permit.Done(breaker.Ignored)
			r.record(Attempt{Tier: s.name, Outcome: OutcomeBudgetExhausted})
			return a, nil, false
		}
	}
	tctx, cancel := context.WithDeadline(gctx, t0.Add(limit))
	defer cancel()
	r.mu.Lock()
	r.stage = s
	n := len(r.attempts)
	r.mu.Unlock()
	a, err = callTier(tctx, s.Tier, q, sr)
	elapsed := time.Since(t0)
	kind := tiers.KindOf(err)
	if err != nil && callerGone(ctx) {
		kind = tiers.KindCanceled // the caller went away: not the tier's fault
	}
	permit.Report(outcomeOf(kind), elapsed)
	if s.cacheTyp != "" && (err == nil || kind == tiers.KindMiss) {
		reason := "miss"
		if err == nil {
			reason = s.cacheTyp
		}
		p.emit(Event{Kind: EventCache, Tenant: r.tenant, Tier: s.name, Reason: reason})
	}
	if r.count() == n { // the tier reported no candidate attempts of its own
		at := Attempt{Tier: s.name, Outcome: OutcomeSuccess, Duration: elapsed, Model: a.Model, Usage: a.Usage}
		if err != nil {
			var te *tiers.Error
			if errors.As(err, &te) {
				at.Model, at.Usage = te.Model, te.Usage
			}
			at.Outcome, at.Error = string(kind), describe(err)
		}
		r.record(at)
	}
	if (err == nil || a.Interrupted) && a.Source == "" {
		a.Source = s.source
	}
	return a, err, true
}

// enqueue takes a slot of s's bulkhead for a call asked at now, waiting
// in its queue no longer than its queue timeout and the time the budget
// leaves to s (not the call's time limit: the call has not started). It
// records why not when it takes none.
func (p *Pipeline) enqueue(ctx context.Context, r *run, s *stage, b budget, now time.Time) bool {
	ok := s.bulk.acquire(ctx, b.left(s, now))
	switch {
	case ok:
	case callerGone(ctx):
		// The caller went away while queued: the bulkhead did not turn
		// it away.
		r.record(Attempt{Tier: s.name, Outcome: string(tiers.KindCanceled), Duration: time.Since(now)})
	default:
		s.bulk.reject()
		p.emit(Event{Kind: EventBulkheadRejected, Tenant: r.tenant, Tier: s.name})
		r.record(Attempt{Tier: s.name, Outcome: OutcomeBulkheadFull})
	}
	return ok
}

// callerGone reports whether the caller's ctx has ended or reached its
// deadline: a call cut short then is the caller going away, not the
// callee's fault. The deadline is read off the clock, not off ctx.Err:
// a call's time limit may end at the same instant and fire first.
func callerGone(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// callTier calls t (to stream, with sr, if it can), turning a panic into
// an error so that one bad tier cannot take the process down.
func callTier(ctx context.Context, t tiers.Tier, q tiers.Query, sr *tiers.StreamRequest) (a tiers.Answer, err error) {
	defer func() {
		if v := recover(); v != nil {
			a, err = tiers.Answer{}, &tiers.Error{Kind: tiers.KindOther, Tier: t.Name(), Err: fmt.Errorf("tier panicked: %v", v)}
		}
	}()
	if st, ok := t.(tiers.StreamTier); ok && sr != nil {
		return st.AnswerStream(ctx, q, *sr)
	}
	return t.Answer(ctx, q)
}

// answered builds the Result of a, lets the caches learn it (when
// remember is set and a is not Interrupted) and reports it.
func (p *Pipeline) answered(ctx context.Context, r *run, q tiers.Query, a tiers.Answer, start time.Time, remember bool) *Result {
	res := &r.res
	*res = Result{
		Answer:   a,
		Degraded: a.Source != tiers.SourcePrimary && a.Source != tiers.SourceCache,
		Attempts: r.attempts,
	}
	if remember && !a.Interrupted {
		p.remember(ctx, q, a, start)
	}
	res.Duration = time.Since(start)
	p.emit(Event{Kind: EventAnswered, Tenant: q.Tenant, Tier: string(a.Source), Result: res})
	return res
}

// remember offers a to the caches (the tiers.Rememberer stages) within
// what is left of the question's budget: a write-back that has to embed
// the question (the cache tier was skipped) must not hold the answer past
// the request's deadline, and with no time left nothing is written back.
// An answer from a cache, which is not written back, is offered as it is.
func (p *Pipeline) remember(ctx context.Context, q tiers.Query, a tiers.Answer, start time.Time) {
	var rctx context.Context
	for _, s := range p.stages {
		rm, ok := s.Tier.(tiers.Rememberer)
		if !ok {
			continue
		}
		if rctx == nil {
			rctx = ctx
			if a.Source != tiers.SourceCache && a.Source != tiers.SourceStaleCache {
				deadline := p.newBudget(ctx, start).deadline
				if !time.Now().Before(deadline) {
					return
				}
				var cancel context.CancelFunc
				rctx, cancel = context.WithDeadline(ctx, deadline)
				defer cancel()
			}
		}
		rm.Remember(rctx, q, a)
	}
}

// Acquire implements tiers.CandidateGuard for the LLM tiers of the run:
// a candidate cooling down after a 429 or with an open breaker is skipped
// (and the skip recorded); otherwise the release reports the outcome to the
// candidate's breaker, starts a cooldown on 429 and records the attempt.
func (r *run) Acquire(ctx context.Context, tier string, c tiers.Candidate) (func(error, tiers.Usage), bool) {
	p := r.p
	if p.cool.active(c.ID, p.clock.Now) {
		r.record(Attempt{Tier: tier, Model: c.ID, Outcome: OutcomeCoolingDown})
		return nil, false
	}
	b := p.models[c.ID]
	if b == nil {
		var cfg breaker.Config
		r.mu.Lock()
		if r.stage != nil {
			cfg = r.stage.Breaker
		}
		r.mu.Unlock()
		b = p.breakers.GetWith("model/"+c.ID, p.breakerConfig(cfg))
	}
	// The candidates of a run are called one after another: the run's
	// slot holds the call under way, and its release is made once per
	// run. A second call while one is under way gets a slot of its own.
	cc := &r.cand
	r.mu.Lock()
	if cc.busy {
		cc = &candidateCall{}
	}
	cc.busy = true
	r.mu.Unlock()
	var err error
	if cc.permit, err = b.Allow(); err != nil {
		r.settle(cc, Attempt{Tier: tier, Model: c.ID, Outcome: OutcomeBreakerOpen})
		return nil, false
	}
	cc.tier, cc.id, cc.cooldown, cc.t0 = tier, c.ID, c.Cooldown, time.Now()
	if cc != &r.cand {
		return func(err error, u tiers.Usage) { r.finish(cc, err, u) }, true
	}
	if r.release == nil {
		r.release = func(err error, u tiers.Usage) { r.finish(&r.cand, err, u) }
	}
	return r.release, true
}

// candidateCall is a model candidate call under way.
type candidateCall struct {
	busy     bool
	permit   breaker.Permit
	tier, id string
	cooldown time.Duration
	t0       time.Time
}

// finish reports the outcome of candidate call cc to its breaker, starts
// a cooldown after a 429 and records the attempt.
func (r *run) finish(cc *candidateCall, err error, u tiers.Usage) {
	elapsed := time.Since(cc.t0)
	kind := tiers.KindOf(err)
	if err != nil && callerGone(r.gctx.Context) {
		kind = tiers.KindCanceled // the caller went away: not the model's fault, as in try
	}
	cc.permit.Report(outcomeOf(kind), elapsed)
	at := Attempt{Tier: cc.tier, Model: cc.id, Outcome: OutcomeSuccess, Duration: elapsed, Usage: u}
	if err != nil {
		at.Outcome, at.Error = string(kind), describe(err)
	}
	if kind == tiers.KindRateLimited {
		r.p.coolDown(cc.id, err, cc.cooldown)
	}
	r.settle(cc, at)
}

// coolDown starts the cooldown of model id after its 429 err: the
// Retry-After it carries, else the candidate's cooldown, else the
// pipeline's.
func (p *Pipeline) coolDown(id string, err error, cooldown time.Duration) {
	d := cooldown
	var te *tiers.Error
	if errors.As(err, &te) && te.RetryAfter > 0 {
		d = te.RetryAfter
	}
	if d <= 0 {
		d = p.cooldown
	}
	p.cool.set(id, p.clock.Now().Add(d))
}
