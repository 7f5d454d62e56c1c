package pipeline

import (
	"context"

	"github.com/ragfuse/ragfuse/tiers"
)

// guardEmbedder returns the embedder of a question asked with ctx: the
// Options.Embedder guarded by an auxGuard that records no attempts.
func (p *Pipeline) guardEmbedder(ctx context.Context) *tiers.GuardedEmbedder {
	e := &struct {
		tiers.GuardedEmbedder
		g auxGuard
	}{g: auxGuard{p: p, b: p.embedGuard, caller: ctx}}
	e.GuardedEmbedder = tiers.GuardedEmbedder{Embedder: p.embedder, Model: p.embedModel, Guard: &e.g}
	return &e.GuardedEmbedder
}
