package pipeline

import (
	"context"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

// budget is the time of one question: from when its caller asked, its
// length (the request timeout, or the caller's shorter deadline), and the
// request timeout, next to which the reserves of later tiers shrink.
type budget struct {
	start          time.Time
	total, timeout time.Duration
}

// newBudget returns the budget of a question started at start: the
// request timeout, or the caller's shorter deadline.
func (p *Pipeline) newBudget(ctx context.Context, start time.Time) budget {
	deadline := start.Add(p.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return budget{start: start, total: deadline.Sub(start), timeout: p.timeout}
}

// deadline returns when the budget ends.
func (b budget) deadline() time.Time { return b.start.Add(b.total) }

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
	return b.deadline().Sub(now) - after
}

// budgetGuard gives the call its time limit out of the question's budget
// and skips the stage (budget_exhausted) when no time is left for it. The
// last stage is called whatever is left.
type budgetGuard struct{ next breakerGuard }

func (g *budgetGuard) call(ctx context.Context, c *call) (tiers.Answer, error) {
	if !c.startAt(time.Now()) {
		return c.skip(outcomeBudgetExhausted)
	}
	return g.next.call(ctx, c)
}

// startAt starts the call's time at now, with its limit out of the
// budget. It reports false when no time is left and the stage is not the
// last.
func (c *call) startAt(now time.Time) bool {
	c.start, c.limit = now, c.budget.limit(c.stage, now)
	return c.limit > 0 || c.stage.last
}

// retrievalTimeout returns opts.RetrievalTimeout with its default filled
// in, 0 for none.
func retrievalTimeout(opts Options) time.Duration {
	switch {
	case opts.RetrievalTimeout < 0:
		return 0
	case opts.RetrievalTimeout > 0:
		return opts.RetrievalTimeout
	}
	for _, st := range opts.Tiers {
		if st.Tier.Source() == tiers.SourceRetrieval && st.Timeout > 0 {
			return st.Timeout
		}
	}
	return defaultRetrievalTimeout
}
