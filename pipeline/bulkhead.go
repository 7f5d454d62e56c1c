package pipeline

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// BulkheadConfig limits the calls in flight into one tier (Stage.Bulkhead).
type BulkheadConfig struct {
	MaxConcurrent int           // calls at once; at least 1
	MaxQueue      int           // calls that may wait for a slot; 0: none wait
	QueueTimeout  time.Duration // the longest a call waits for a slot; 0: none wait
}

// bulkhead limits the calls in flight into one tier: at most max at once,
// at most maxQueue more waiting, each for at most queueTimeout. It is safe
// for concurrent use.
type bulkhead struct {
	sem          chan struct{} // one token per call in flight
	maxQueue     int64
	queueTimeout time.Duration
	queued       atomic.Int64
	rejected     atomic.Int64
}

func newBulkhead(c BulkheadConfig) *bulkhead {
	return &bulkhead{
		sem:          make(chan struct{}, max(c.MaxConcurrent, 1)),
		maxQueue:     int64(max(c.MaxQueue, 0)),
		queueTimeout: c.QueueTimeout,
	}
}

// tryAcquire takes a slot if one is free, without waiting.
func (b *bulkhead) tryAcquire() bool {
	select {
	case b.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// acquire takes a slot, waiting in the queue if there is room, until the
// queue timeout, maxWait (if shorter) or ctx is done. It reports whether a
// slot was taken; the caller must then call release, and otherwise reject
// if the bulkhead turned the call away (not when the caller went away).
func (b *bulkhead) acquire(ctx context.Context, maxWait time.Duration) bool {
	select {
	case b.sem <- struct{}{}:
		return true
	default:
	}
	wait := min(b.queueTimeout, maxWait)
	if wait <= 0 || b.queued.Add(1) > b.maxQueue {
		if wait > 0 {
			b.queued.Add(-1)
		}
		return false
	}
	defer b.queued.Add(-1)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case b.sem <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (b *bulkhead) release() { <-b.sem }

// reject counts a call the bulkhead turned away.
func (b *bulkhead) reject() { b.rejected.Add(1) }

// bulkheadGuard takes a slot of the stage's bulkhead, if it has one
// (b), for the call,
// waiting in its queue no longer than its queue timeout and the time the
// budget leaves to the stage (not the call's time limit: the call has not
// started). Turned away, the stage is skipped (bulkhead_full); a caller
// that went away while queued is recorded as canceled. The call's time
// starts when it leaves the queue, with its limit taken again then: a
// call whose budget ran out in the queue is skipped (budget_exhausted).
// The tier breaker's permit waits (breaker.Permit.Wait) while the call is
// queued, and begins when it leaves the queue: time in the queue is not in
// flight at the tier.
type bulkheadGuard struct {
	b    *bulkhead // nil: no bulkhead
	next timeLimit
}

func (g *bulkheadGuard) call(ctx context.Context, c *call, permit *breaker.Permit) (tiers.Answer, error) {
	if g.b == nil {
		return g.next.call(ctx, c)
	}
	if !g.enter(ctx, c, permit) {
		return tiers.Answer{}, errSkipped
	}
	defer g.b.release()
	if !c.startAt(time.Now()) {
		return c.skip(outcomeBudgetExhausted)
	}
	permit.Begin()
	return g.next.call(ctx, c)
}

// enter takes a slot for c, the permit waiting while c is queued, or
// records why not.
func (g *bulkheadGuard) enter(ctx context.Context, c *call, permit *breaker.Permit) bool {
	ok := g.b.tryAcquire()
	if !ok {
		permit.Wait()
		ok = g.b.acquire(ctx, c.budget.left(c.stage, c.start))
	}
	switch {
	case ok:
	case callerGone(ctx):
		// The caller went away while queued: the bulkhead did not turn
		// it away.
		c.run.record(Attempt{Tier: c.stage.name, Outcome: string(tiers.KindCanceled), Duration: time.Since(c.start)})
	default:
		g.b.reject()
		c.run.p.emit(Event{Kind: EventBulkheadRejected, Tenant: c.q.Tenant, Tier: c.stage.name})
		c.skip(outcomeBulkheadFull)
	}
	return ok
}

// BulkheadStatus is one tier's bulkhead at one moment.
type BulkheadStatus struct {
	Tier          string `json:"tier"`
	MaxConcurrent int    `json:"max_concurrent"`
	MaxQueue      int    `json:"max_queue"`
	InFlight      int    `json:"in_flight"`
	Queued        int    `json:"queued"`
	Rejected      int64  `json:"rejected"` // since start
}

func (b *bulkhead) status(tier string) BulkheadStatus {
	return BulkheadStatus{
		Tier:          tier,
		MaxConcurrent: cap(b.sem),
		MaxQueue:      int(b.maxQueue),
		InFlight:      len(b.sem),
		Queued:        int(b.queued.Load()),
		Rejected:      b.rejected.Load(),
	}
}
