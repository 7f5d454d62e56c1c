package pipeline

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

// A guard is one protection of a stage's call. Guards wrap each other the
// way middleware wraps a handler: call passes c on to the next guard, the
// call of the tier innermost, and hears how it went. A guard that does not
// let the call through records the attempt and returns errSkipped.
type guard interface {
	call(ctx context.Context, c *call) (tiers.Answer, error)
}

// errSkipped is returned by a guard that did not let the call through; the
// stage loop goes on to the next stage. It never leaves the package.
var errSkipped = errors.New("pipeline: stage skipped")

// call is one call of a stage through its guards: what the guards are
// given, and what they learn of it on the way in and out. ctx travels
// beside it, each guard passing on the context the next one gets. A call
// is the stage's tiers.CandidateGuard (see Acquire).
type call struct {
	run   *run
	stage *stage
	sr    *tiers.StreamRequest // set: the tier streams its answer (tiers.StreamTier)

	start time.Time     // the call's time starts: the guards on, or when it left the bulkhead's queue
	limit time.Duration // the call's time limit, from start

	kind     tiers.Kind    // the call's classified outcome; "" for a success
	elapsed  time.Duration // the tier call's time
	reported atomic.Int32  // the candidate attempts the tier reported through Acquire
}

// compose returns the guards of s, outermost first, in the order the
// package doc writes: quota (model stages), budget, breaker, bulkhead
// (when configured), time limit, and the classified call of the tier.
func compose(s *stage) guard {
	var g guard = classifier{}
	g = timeLimit{next: g}
	if s.bulk != nil {
		g = &bulkheadGuard{b: s.bulk, next: g}
	}
	g = &breakerGuard{b: s.breaker, lastResort: s.lastResort, next: g}
	g = budgetGuard{next: g}
	if s.Model {
		g = quotaGuard{next: g}
	}
	return g
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
