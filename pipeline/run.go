package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/retrieval"
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
	return p.fly(ctx, q, degraded, start)
}

// lead runs q, admitted at start, as run r: the run of a flight's leader,
// or of a stream. A panic (a bug of the pipeline's: the tiers' panics are
// caught where they are called) ends the question with an error, and its
// flight with it.
func (p *Pipeline) lead(ctx context.Context, r *run, q tiers.Query, degraded bool, start time.Time) (res *Result, err error) {
	defer aborted(&res, &err)
	if !p.inflight.enter() {
		return nil, ErrClosed
	}
	defer p.inflight.leave()
	qn := question{run: r, ctx: ctx, budget: p.newBudget(ctx, start), degraded: degraded}
	qn.q = p.startRun(r, ctx, q, degraded)
	return qn.descend()
}

// aborted, deferred, turns a panic of the pipeline's own code into the
// question's error, with its stack.
func aborted(res **Result, err *error) {
	if e := recover(); e != nil {
		*res, *err = nil, fmt.Errorf("pipeline: question aborted: %v\n%s", e, debug.Stack())
	}
}

// run is what of one question outlives its stage loop or is shared with
// the tiers: the attempts, the result, the candidate guard and the Memo,
// allocated together. The attempts are guarded by mu because a tier may
// report candidate attempts from its own goroutines.
type run struct {
	p      *Pipeline
	caller context.Context // the question's context, as the caller gave it
	tenant string
	stream *streamRun     // the streaming hook; nil for Ask
	guard  candidateGuard // the candidate guard of the stage call under way
	res    Result         // the result

	mu       sync.Mutex
	attempts []Attempt // backed by buf while it fits
	buf      [2]Attempt
	cand     candidateCall // the candidate call under way, if any
	release  func(error, tiers.Usage)

	memo   tiers.Memo
	flight flight // the run's flight, when its caller leads one
}

// question is one question on its way down the stages, as the stage loop
// and the guards see it. It lives on the stack of the goroutine that
// asked.
type question struct {
	run      *run
	ctx      context.Context // the caller's
	q        tiers.Query     // with its Memo
	budget   budget
	degraded bool // over a rate limit: the model stages are skipped
}

// record records attempt a.
func (r *run) record(a Attempt) { r.settle(nil, nil, a) }

// settle records attempt a, counting it as one of the candidate attempts
// reported through guard g if g is not nil, and empties candidate call
// cc, if not nil, for the next one.
func (r *run) settle(g *candidateGuard, cc *candidateCall, a Attempt) {
	if g != nil {
		g.reported.Add(1)
	}
	r.mu.Lock()
	if cc != nil {
		*cc = candidateCall{}
	}
	r.attempts = append(r.attempts, a)
	r.mu.Unlock()
	r.p.emit(Event{Kind: EventAttempt, Tenant: r.tenant, Tier: a.Tier, Attempt: a})
}

// startRun starts r, a new run, as the run of q, asked with ctx (over a
// rate limit when degraded): its attempt record and its Memo. It returns
// q with the Memo.
func (p *Pipeline) startRun(r *run, ctx context.Context, q tiers.Query, degraded bool) tiers.Query {
	r.p, r.caller, r.tenant = p, ctx, q.Tenant
	r.guard.run = r
	r.attempts = r.buf[:0]
	if q.Memo == nil && (p.memoK > 0 || p.embedder != nil || p.kb != nil || p.condenser != nil) {
		r.memo.K, r.memo.Embedder, r.memo.RetrievalTimeout = p.memoK, p.embedder, p.retrieveFor
		if p.embedGuard != nil {
			r.memo.Embedder = p.guardEmbedder(ctx)
		}
		if p.rerank != nil {
			r.memo.K = p.rerankK
			g := &auxGuard{p: p, b: p.rerankB, caller: ctx, run: r, overQuota: degraded}
			r.memo.Rerank = func(ctx context.Context, question string, docs []retrieval.Doc) []retrieval.Doc {
				return p.rerank.Apply(ctx, g, question, docs)
			}
		}
		if p.condenser != nil && len(q.History) > 0 {
			g := &auxGuard{p: p, b: p.condenseB, caller: ctx, run: r, overQuota: degraded}
			r.memo.Condense = func(ctx context.Context, q tiers.Query) (string, error) {
				return p.condenser.Condense(ctx, g, q)
			}
		}
		q.Memo = &r.memo
	}
	if p.kb != nil {
		// The version the question starts on, whichever tier asks first:
		// an answer built while the knowledge base is reloaded is not
		// cached under the new version, even when the cache tier was
		// skipped before it.
		q.Memo.KBVersion(p.kbCacheVer)
	}
	return q
}

// descend runs the question down the stages until one answers: the stage
// loop of Ask and Stream alike. Each stage is called through its guards
// (see compose); run.stream, nil for Ask, is what streaming adds to the
// loop: which stages may continue a broken stream, the stream request of
// each call, and how an answer is sent.
func (qn *question) descend() (*Result, error) {
	r, ctx := qn.run, qn.ctx
	var hedging *stage // a stage called as a hedge: the loop skips it
	for _, s := range r.p.stages {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s == hedging || !r.stream.wants(s) {
			continue
		}
		a, s, hedge, err := qn.attempt(s)
		if hedge != nil {
			hedging = hedge
		}
		if err := r.stream.stopped(); err != nil {
			return nil, err
		}
		switch {
		case err == nil:
			return qn.done(s, a)
		case err == errSkipped:
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case a.Interrupted && r.stream.broke(s, a, err):
			return r.stream.interrupted(qn)
		}
	}
	if r.stream.pending() {
		return r.stream.interrupted(qn)
	}
	r.res = Result{Attempts: r.attempts, Duration: time.Since(qn.budget.start)}
	return &r.res, ErrExhausted
}

// attempt calls stage s, hedged if it is (Stage.HedgeAfter) and no
// broken stream awaits its continuation. It returns the answer or failure
// of the call that ended it, the stage of that call, and the hedging
// stage if it was called too.
func (qn *question) attempt(s *stage) (tiers.Answer, *stage, *stage, error) {
	if s.hedgeTo == nil || qn.run.stream.pending() {
		a, err := qn.try(s)
		return a, s, nil, err
	}
	a, from, tried, err := qn.hedged(s, s.hedgeTo)
	if !tried {
		return a, from, nil, err
	}
	return a, from, s.hedgeTo, err
}

// try calls stage s through its guards. It returns errSkipped when a guard
// did not let the call through.
func (qn *question) try(s *stage) (tiers.Answer, error) {
	r := qn.run
	r.guard.stage = s
	r.guard.reported.Store(0)
	c := call{question: *qn, stage: s, guard: &r.guard, sr: r.stream.request(s)}
	if r.p.tracer != nil {
		return qn.traced(qn.ctx, s, &c)
	}
	return s.guard.call(qn.ctx, &c)
}

// done ends the question with a, the answer of stage s.
func (qn *question) done(s *stage, a tiers.Answer) (*Result, error) {
	if sr := qn.run.stream; sr != nil {
		return sr.done(qn, s, a)
	}
	return qn.answered(a, true), nil
}

// answered builds the Result of a, lets the caches learn it (when
// remember is set and a is not Interrupted) and reports it.
func (qn *question) answered(a tiers.Answer, remember bool) *Result {
	r := qn.run
	res := &r.res
	*res = Result{
		Answer:   a,
		Degraded: a.Source != tiers.SourcePrimary && a.Source != tiers.SourceCache,
		Attempts: r.attempts,
	}
	if remember && !a.Interrupted {
		qn.remember(a)
	}
	res.Duration = time.Since(qn.budget.start)
	r.p.emit(Event{Kind: EventAnswered, Tenant: r.tenant, Tier: string(a.Source), Result: res})
	return res
}

// remember offers a to the caches (the tiers.Rememberer stages) within
// what is left of the question's budget: a write-back that has to embed
// the question (the cache tier was skipped) must not hold the answer past
// the request's deadline, and with no time left nothing is written back.
// An answer from a cache, which is not written back, is offered as it is.
func (qn *question) remember(a tiers.Answer) {
	var rctx context.Context
	for _, s := range qn.run.p.stages {
		rm, ok := s.Tier.(tiers.Rememberer)
		if !ok {
			continue
		}
		if rctx == nil {
			rctx = qn.ctx
			if a.Source != tiers.SourceCache && a.Source != tiers.SourceStaleCache {
				deadline := qn.budget.deadline()
				if !time.Now().Before(deadline) {
					return
				}
				var cancel context.CancelFunc
				rctx, cancel = context.WithDeadline(qn.ctx, deadline)
				defer cancel()
			}
		}
		rm.Remember(rctx, qn.q, a)
	}
}
