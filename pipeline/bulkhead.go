package pipeline

import (
	"context"
	"sync/atomic"
	"time"
)

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
