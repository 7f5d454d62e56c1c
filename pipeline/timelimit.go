package pipeline

import (
	"context"

	"github.com/ragfuse/ragfuse/tiers"
)

// timeLimit gives the call a child context that ends when its limit has
// passed since its start: the call is really cancelled, and a hung
// upstream holds no goroutine after it. A streamed answer runs inside it
// whole, as a call of Ask would.
type timeLimit struct{ next classifier }

func (g *timeLimit) call(ctx context.Context, c *call) (tiers.Answer, error) {
	tctx, cancel := context.WithDeadline(ctx, c.start.Add(c.limit))
	defer cancel()
	return g.next.call(tctx, c)
}
