package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/tiers"
)

// errEmbedderCooling reports an embedding skipped because the service
// answered 429 and its Retry-After (or the cooldown) has not passed.
var errEmbedderCooling = errors.New("pipeline: embedding model cooling down after 429")

// guardedEmbedder calls an embedding service through the breaker of its
// model, like any model call: its errors are classified as a chat call's
// (tiers.ClassifyEmbedding) and its breaker hears them by the same table;
// a 429 cools the model down for its Retry-After (or the pipeline's
// cooldown) without hurting the breaker. While the service is failing or
// cooling down, questions skip embedding at once (the semantic cache
// misses, the hybrid retriever ranks lexically) instead of waiting for
// it. The calling tier's context bounds the call's time. It is safe for
// concurrent use.
type guardedEmbedder struct {
	e  cache.Embedder
	id string // the models: entry, for errors and the cooldown
	b  *breaker.Breaker
	p  *Pipeline // its clock and cooldowns

	cooldown time.Duration // after a 429 without Retry-After; 0: the pipeline's
}

var _ cache.Embedder = (*guardedEmbedder)(nil)

// Embed embeds texts unless the model is cooling down or its breaker is
// open; those skips are *tiers.Error of KindUnavailable.
func (g *guardedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return g.embed(ctx, ctx, texts)
}

// callerEmbedder is the guarded embedder as one run calls it: it knows the
// run's caller, so that an embedding cut short because the caller went
// away (its context ended or its deadline passed) is not held against the
// model, as in Pipeline.try. It lives in the run, allocated with it.
type callerEmbedder struct {
	g      *guardedEmbedder
	caller context.Context
}

func (c *callerEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return c.g.embed(ctx, c.caller, texts)
}

// embed is Embed for a call made on behalf of caller.
func (g *guardedEmbedder) embed(ctx, caller context.Context, texts []string) ([][]float32, error) {
	if g.p.cool.active(g.id, g.p.clock.Now) {
		return nil, &tiers.Error{Kind: tiers.KindUnavailable, Tier: "embedding", Model: g.id, Err: errEmbedderCooling}
	}
	permit, err := g.b.Allow()
	if err != nil {
		return nil, &tiers.Error{Kind: tiers.KindUnavailable, Tier: "embedding", Model: g.id, Err: err}
	}
	cctx, retryAfter := tiers.WithRetryAfter(ctx)
	t0 := time.Now()
	vs, err := g.e.Embed(cctx, texts)
	if err == nil {
		permit.Report(breaker.Success, time.Since(t0))
		return vs, nil
	}
	te := tiers.ClassifyEmbedding(g.id, err, ctx.Err(), retryAfter())
	kind := te.Kind
	if callerGone(caller) {
		kind = tiers.KindCanceled // the caller went away: not the model's fault
	}
	permit.Report(outcomeOf(kind), time.Since(t0))
	if te.Kind == tiers.KindRateLimited {
		g.p.coolDown(g.id, te, g.cooldown)
	}
	return nil, te
}
