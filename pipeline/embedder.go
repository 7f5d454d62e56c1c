package pipeline

import (
	"context"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// embedGuard guards one question's calls of the embedding model
// (Options.EmbedderModel, through tiers.GuardedEmbedder) like a model
// candidate's, without attempt records: while the model cools down after
// a 429 or its breaker is open, the question skips embedding at once (the
// semantic cache misses, the hybrid retriever ranks lexically) instead of
// waiting for it. Its breaker hears the classified outcome by the same
// table as a chat call's; a 429 cools the model down for its Retry-After
// (or its cooldown) without hurting the breaker, and an embedding cut
// short because the question's caller went away (its context ended or its
// deadline passed) is not held against the model. The calling tier's
// context bounds the call's time.
type embedGuard struct {
	p      *Pipeline // its clock and cooldowns
	b      *breaker.Breaker
	caller context.Context // the question's context
}

var _ tiers.CandidateGuard = (*embedGuard)(nil)

func (g *embedGuard) Acquire(_ context.Context, _ string, m tiers.Candidate) (func(error, tiers.Usage), bool) {
	if g.p.cool.active(m.ID, g.p.clock.Now) {
		return nil, false
	}
	permit, err := g.b.Allow()
	if err != nil {
		return nil, false
	}
	t0 := time.Now()
	return func(err error, _ tiers.Usage) {
		kind := tiers.KindOf(err)
		if kind == tiers.KindRateLimited {
			g.p.coolDown(m.ID, err, m.Cooldown)
		}
		if err != nil && callerGone(g.caller) {
			kind = tiers.KindCanceled // the caller went away: not the model's fault
		}
		permit.Report(outcomeOf(kind), time.Since(t0))
	}, true
}

// guardEmbedder returns the embedder of a question asked with ctx: the
// Options.Embedder guarded by an embedGuard.
func (p *Pipeline) guardEmbedder(ctx context.Context) *tiers.GuardedEmbedder {
	e := &struct {
		tiers.GuardedEmbedder
		g embedGuard
	}{g: embedGuard{p: p, b: p.embedGuard, caller: ctx}}
	e.GuardedEmbedder = tiers.GuardedEmbedder{Embedder: p.embedder, Model: p.embedModel, Guard: &e.g}
	return &e.GuardedEmbedder
}
