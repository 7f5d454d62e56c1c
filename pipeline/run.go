package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

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
	p.startRun(r, ctx, q, degraded, start)
	return r.descend()
}

// aborted, deferred, turns a panic of the pipeline's own code into the
// question's error, with its stack.
func aborted(res **Result, err *error) {
	if e := recover(); e != nil {
		*res, *err = nil, fmt.Errorf("pipeline: question aborted: %v\n%s", e, debug.Stack())
	}
}

// run is one question's way down the stages. The attempts are guarded by
// mu because a tier may report candidate attempts from its own goroutines.
type run struct {
	p        *Pipeline
	caller   context.Context // the question's context, as the caller gave it
	q        tiers.Query     // the question, with its Memo
	degraded bool            // over a rate limit: the model stages are skipped
	budget   budget
	stream   *streamRun // the streaming hook; nil for Ask
	res      Result     // the result, allocated with the run

	mu       sync.Mutex
	attempts []Attempt // backed by buf while it fits
	buf      [2]Attempt
	cand     candidateCall // the candidate call under way, if any
	release  func(error, tiers.Usage)

	// Allocated with the run: the stage call under way and the question's
	// Memo.
	call call
	memo tiers.Memo

	flight flight // the run's flight, when its caller leads one
}

// record records attempt a.
func (r *run) record(a Attempt) { r.settle(nil, nil, a) }

// settle records attempt a, counting it as one of call c's candidate
// attempts if c is not nil, and empties candidate call cc, if not nil,
// for the next one, under one lock.
func (r *run) settle(c *call, cc *candidateCall, a Attempt) {
	if c != nil {
		c.reported.Add(1)
	}
	r.mu.Lock()
	if cc != nil {
		*cc = candidateCall{}
	}
	r.attempts = append(r.attempts, a)
	r.mu.Unlock()
	r.p.emit(Event{Kind: EventAttempt, Tenant: r.q.Tenant, Tier: a.Tier, Attempt: a})
}

// startRun starts r, a new run, as the run of q, admitted at start: its
// budget, its attempt record and q with a Memo.
func (p *Pipeline) startRun(r *run, ctx context.Context, q tiers.Query, degraded bool, start time.Time) {
	r.p, r.caller, r.degraded = p, ctx, degraded
	r.budget = p.newBudget(ctx, start)
	r.attempts = r.buf[:0]
	if q.Memo == nil && (p.memoK > 0 || p.embedder != nil || p.kb != nil) {
		r.memo.K, r.memo.Embedder = p.memoK, p.embedder
		if p.embedGuard != nil {
			r.memo.Embedder = p.guardEmbedder(ctx)
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
	r.q = q
}

// descend runs the question down the stages until one answers: the stage
// loop of Ask and Stream alike. Each stage is called through its guards
// (see compose); r.stream, nil for Ask, is what streaming adds to the
// loop: which stages may continue a broken stream, the stream request of
// each call, and how an answer is sent.
func (r *run) descend() (*Result, error) {
	ctx := r.caller
	for _, s := range r.p.stages {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !r.stream.wants(s) {
			continue
		}
		a, err := r.try(s)
		if err := r.stream.stopped(); err != nil {
			return nil, err
		}
		switch {
		case err == nil:
			return r.done(s, a)
		case err == errSkipped:
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case a.Interrupted && r.stream.broke(s, a, err):
			return r.stream.interrupted(r)
		}
	}
	if r.stream.pending() {
		return r.stream.interrupted(r)
	}
	r.res = Result{Attempts: r.attempts, Duration: time.Since(r.budget.start)}
	return &r.res, ErrExhausted
}

// try calls stage s through its guards. It returns errSkipped when a guard
// did not let the call through.
func (r *run) try(s *stage) (tiers.Answer, error) {
	c := &r.call
	c.run, c.stage, c.sr = r, s, r.stream.request(s)
	c.kind, c.elapsed = "", 0
	c.reported.Store(0)
	return s.guard.call(r.caller, c)
}

// done ends the question with a, the answer of stage s.
func (r *run) done(s *stage, a tiers.Answer) (*Result, error) {
	if r.stream != nil {
		return r.stream.done(r, s, a)
	}
	return r.answered(a, true), nil
}

// answered builds the Result of a, lets the caches learn it (when
// remember is set and a is not Interrupted) and reports it.
func (r *run) answered(a tiers.Answer, remember bool) *Result {
	res := &r.res
	*res = Result{
		Answer:   a,
		Degraded: a.Source != tiers.SourcePrimary && a.Source != tiers.SourceCache,
		Attempts: r.attempts,
	}
	if remember && !a.Interrupted {
		r.remember(a)
	}
	res.Duration = time.Since(r.budget.start)
	r.p.emit(Event{Kind: EventAnswered, Tenant: r.q.Tenant, Tier: string(a.Source), Result: res})
	return res
}

// remember offers a to the caches (the tiers.Rememberer stages) within
// what is left of the question's budget: a write-back that has to embed
// the question (the cache tier was skipped) must not hold the answer past
// the request's deadline, and with no time left nothing is written back.
// An answer from a cache, which is not written back, is offered as it is.
func (r *run) remember(a tiers.Answer) {
	var rctx context.Context
	for _, s := range r.p.stages {
		rm, ok := s.Tier.(tiers.Rememberer)
		if !ok {
			continue
		}
		if rctx == nil {
			rctx = r.caller
			if a.Source != tiers.SourceCache && a.Source != tiers.SourceStaleCache {
				if !time.Now().Before(r.budget.deadline()) {
					return
				}
				var cancel context.CancelFunc
				rctx, cancel = context.WithDeadline(r.caller, r.budget.deadline())
				defer cancel()
			}
		}
		rm.Remember(rctx, r.q, a)
	}
}
