package pipeline

import (
	"context"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// auxGuard guards one question's calls of an auxiliary model (the
// embedding model behind tiers.GuardedEmbedder, the model that condenses
// a follow-up, a rerank model) like a model candidate's: while the model
// cools down after a 429 or its breaker "model/<id>" is open, the call is
// skipped at once and the question goes on without it instead of waiting
// for it. Its breaker hears the classified outcome by the same table as a
// chat call's; a 429 cools the model down for its Retry-After (or its
// cooldown) without hurting the breaker, and a call cut short because the
// question's caller went away (its context ended or its deadline passed)
// is not held against the model. With run set, each call and each skip is
// also an attempt of the question, under the tier Acquire names
// (tiers.CondenseTier); the embedding is not recorded. With overQuota set
// (the question is over a rate limit, and its model tiers are skipped)
// every call is skipped as over_quota. The calling code bounds the call's
// time.
type auxGuard struct {
	p         *Pipeline // its clock and cooldowns
	b         *breaker.Breaker
	caller    context.Context // the question's context
	run       *run            // where attempts are recorded; nil: none
	overQuota bool
}

var _ tiers.CandidateGuard = (*auxGuard)(nil)

func (g *auxGuard) Acquire(ctx context.Context, tier string, m tiers.Candidate) (context.Context, func(error, tiers.Usage), bool) {
	if g.overQuota {
		g.skip(ctx, Attempt{Tier: tier, Model: m.ID, Outcome: outcomeQuota})
		return nil, nil, false
	}
	if g.p.cool.active(m.ID, g.p.clock.Now) {
		g.skip(ctx, Attempt{Tier: tier, Model: m.ID, Outcome: outcomeCoolingDown})
		return nil, nil, false
	}
	permit, err := g.b.Allow()
	if err != nil {
		g.skip(ctx, Attempt{Tier: tier, Model: m.ID, Outcome: outcomeBreakerOpen})
		return nil, nil, false
	}
	t0 := time.Now()
	ctx, span := g.p.startModel(ctx, tier, m.ID)
	return ctx, func(err error, u tiers.Usage) {
		elapsed := time.Since(t0)
		kind := tiers.KindOf(err)
		if kind == tiers.KindRateLimited {
			g.p.coolDown(m.ID, err, m.Cooldown)
		}
		if err != nil && callerGone(g.caller) {
			kind = tiers.KindCanceled // the caller went away: not the model's fault
		}
		at := Attempt{Tier: tier, Model: m.ID, Outcome: OutcomeSuccess, Duration: elapsed, Usage: u}
		if err != nil {
			at.Outcome, at.Error = string(kind), describe(err)
		}
		permit.ReportReason(outcomeOf(kind), elapsed, reasonOf(kind, at.Error))
		endModel(span, at)
		g.record(at)
	}, true
}

// skip records a, a call skipped, as an attempt and a span of no length.
func (g *auxGuard) skip(ctx context.Context, a Attempt) {
	g.p.skippedModel(ctx, a.Tier, a.Model, a.Outcome)
	g.record(a)
}

// record records a as an attempt of g's run, if it has one.
func (g *auxGuard) record(a Attempt) {
	if g.run != nil {
		g.run.record(a)
	}
}

// auxBreaker returns the breaker "model/<id>" of an auxiliary model: the
// one of the chat candidate of that id, if a tier has one, else a new one
// with the default settings, shared through store.
func (p *Pipeline) auxBreaker(id string, store breaker.Store) *breaker.Breaker {
	if b := p.models[id]; b != nil {
		return b
	}
	return p.breakers.GetWith("model/"+id, p.modelConfig(id, breaker.Config{Store: store}))
}
