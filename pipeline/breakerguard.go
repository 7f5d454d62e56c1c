package pipeline

import (
	"context"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// breakerGuard skips the stage (breaker_open) while its breaker
// "tier/<name>" refuses calls, except for a static tier, the answer of
// last resort, which is called even then. The breaker hears the call's
// classified outcome (outcomeOf) and its time, less the time the tier
// waited for the question's documents; a call a guard inside it skipped
// never reached the tier and counts nowhere, and one that lost its hedge
// counts as slow or not at all (hedgedOutcome). While the call is in
// flight, its permit is counted from when it left the bulkhead's queue
// (see bulkheadGuard), documents' wait included: a call in flight for the
// breaker's slow_call_duration counts as slow whatever its report says.
type breakerGuard struct {
	b          *breaker.Breaker
	lastResort bool
	next       bulkheadGuard
}

func (g *breakerGuard) call(ctx context.Context, c *call) (tiers.Answer, error) {
	permit, err := g.b.Allow()
	if err != nil && !g.lastResort {
		return c.skip(outcomeBreakerOpen)
	}
	// A static tier whose breaker is open gets the zero Permit, whose
	// reports are no-ops.
	a, err := g.next.call(ctx, c, &permit)
	switch {
	case err == errSkipped:
		permit.Wait() // never started: not slow in flight
		permit.Done(breaker.Ignored)
	case c.kind == kindHedged:
		permit.Report(hedgedOutcome(g.b, permit.Probe(), c.elapsed-c.retrieving), c.elapsed-c.retrieving)
	default:
		permit.ReportReason(outcomeOf(c.kind), c.elapsed-c.retrieving, reasonOf(c.kind, c.why))
	}
	return a, err
}
