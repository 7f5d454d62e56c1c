package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

// A stage's call goes through its guards, outermost first, in the order
// the package doc writes. Each guard is a type of its own file whose call
// method does its part and calls the next guard, the way middleware wraps
// a handler, and hears how the call went; the last one, the classifier,
// calls the tier. compose builds the chain of a stage once, in New. A
// guard that does not let the call through records the attempt and
// returns errSkipped.
//
// The guards are concrete types held by value, not interfaces, so that a
// call lives on the stack of the goroutine that asked: a question
// allocates its run, not a call per stage.

// errSkipped is returned by a guard that did not let the call through; the
// stage loop goes on to the next stage. It never leaves the package.
var errSkipped = errors.New("pipeline: stage skipped")

// call is one call of a stage through its guards: what the guards are
// given (the question, the stage, the stream request), and what they
// learn of it on the way in and out (the time limit, the classified
// outcome). ctx travels beside it, each guard passing on the context the
// next one gets.
type call struct {
	question // a copy: a pointer into the loop's frame would move it to the heap
	stage    *stage
	guard    *candidateGuard      // the tier's candidate guard for this call
	sr       *tiers.StreamRequest // set: the tier streams its answer (tiers.StreamTier)

	start time.Time     // the call's time starts: the guards on, or when it left the bulkhead's queue
	limit time.Duration // the call's time limit, from start

	kind       tiers.Kind    // the call's classified outcome; "" for a success
	why        string        // a failed call's short, secret-free description (describe)
	elapsed    time.Duration // the tier call's time
	retrieving time.Duration // the part of elapsed a tier other than retrieval waited for the question's documents
}

// compose returns the guards of s, outermost first, in the order the
// package doc writes: quota (model stages), budget, breaker, bulkhead
// (when configured), time limit, and the classified call of the tier.
func compose(s *stage) quotaGuard {
	return quotaGuard{on: s.Model, next: budgetGuard{next: breakerGuard{b: s.breaker, lastResort: s.lastResort,
		next: bulkheadGuard{b: s.bulk}}}}
}

// skip records that the call did not happen, and why.
func (c *call) skip(outcome string) (tiers.Answer, error) {
	c.run.record(Attempt{Tier: c.stage.name, Outcome: outcome})
	return tiers.Answer{}, errSkipped
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
