package pipeline

import (
	"context"
	"errors"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/tiers"
)

// guardedEmbedder calls an embedding service through the breaker of its
// model, like any model call: while the service is failing, questions skip
// embedding at once (the semantic cache misses, the hybrid retriever ranks
// lexically) instead of waiting for it. The calling tier's context bounds
// the call's time. It is safe for concurrent use.
type guardedEmbedder struct {
	e  cache.Embedder
	id string // the models: entry, for errors
	b  *breaker.Breaker
}

var _ cache.Embedder = (*guardedEmbedder)(nil)

// Embed embeds texts unless the breaker is open.
func (g *guardedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	permit, err := g.b.Allow()
	if err != nil {
		return nil, &tiers.Error{Kind: tiers.KindUnavailable, Tier: "embedding", Model: g.id, Err: err}
	}
	vs, err := g.e.Embed(ctx, texts)
	switch {
	case err == nil:
		permit.Done(breaker.Success)
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		permit.Done(breaker.Ignored) // the caller went away
	default:
		permit.Done(breaker.Failure)
	}
	return vs, err
}
