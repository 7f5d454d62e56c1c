package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// candidateGuard is the tiers.CandidateGuard of one stage call (see
// Acquire): the tier's model candidates go through it. The run holds the
// one of the call under way; it counts the candidate attempts the tier
// reported, so that the call records an attempt of its own only when the
// tier reported none.
type candidateGuard struct {
	run      *run
	stage    *stage
	reported atomic.Int32
	lost     atomic.Bool // the call lost its hedge: cancelled, the other call answered first
}

var _ tiers.CandidateGuard = (*candidateGuard)(nil)

// Acquire implements tiers.CandidateGuard for the model candidates of the
// stage's tier: a candidate cooling down after a 429 or with an open
// breaker "model/<id>" is skipped (and the skip recorded); otherwise the
// release reports the outcome to the candidate's breaker, starts a
// cooldown on 429 and records the attempt.
func (g *candidateGuard) Acquire(ctx context.Context, tier string, m tiers.Candidate) (context.Context, func(error, tiers.Usage), bool) {
	r, p := g.run, g.run.p
	if p.cool.active(m.ID, p.clock.Now) {
		p.skippedModel(ctx, tier, m.ID, outcomeCoolingDown)
		r.settle(g, nil, Attempt{Tier: tier, Model: m.ID, Outcome: outcomeCoolingDown})
		return nil, nil, false
	}
	b := p.models[m.ID]
	if b == nil { // a candidate New did not see: the stage's settings
		b = p.breakers.GetWith("model/"+m.ID, p.modelConfig(m.ID, g.stage.Breaker))
	}
	// The candidates of a run are called one after another: the run's
	// slot holds the call under way, and its release is made once per
	// run. A second call while one is under way gets a slot of its own.
	cc := &r.cand
	r.mu.Lock()
	if cc.busy {
		cc = &candidateCall{}
	}
	cc.busy = true
	r.mu.Unlock()
	var err error
	if cc.permit, err = b.Allow(); err != nil {
		p.skippedModel(ctx, tier, m.ID, outcomeBreakerOpen)
		r.settle(g, cc, Attempt{Tier: tier, Model: m.ID, Outcome: outcomeBreakerOpen})
		return nil, nil, false
	}
	cc.guard, cc.tier, cc.id, cc.cooldown, cc.t0 = g, tier, m.ID, m.Cooldown, time.Now()
	// A traced call's release carries its span: the run's release, made
	// once, is for the calls without one.
	ctx, span := p.startModel(ctx, tier, m.ID)
	if cc != &r.cand || span != nil {
		return ctx, func(err error, u tiers.Usage) { r.finish(cc, err, u, span) }, true
	}
	if r.release == nil {
		r.release = func(err error, u tiers.Usage) { r.finish(&r.cand, err, u, nil) }
	}
	return ctx, r.release, true
}

// candidateCall is a model candidate call under way.
type candidateCall struct {
	busy     bool
	guard    *candidateGuard // of the stage call it belongs to
	permit   breaker.Permit
	tier, id string
	cooldown time.Duration
	t0       time.Time
}

// finish reports the outcome of candidate call cc to its breaker, starts
// a cooldown after a 429, records the attempt and ends the call's span, if
// not nil. A failure while the caller is gone is not the model's fault, as
// for a stage's call.
func (r *run) finish(cc *candidateCall, err error, u tiers.Usage, span trace.Span) {
	elapsed := time.Since(cc.t0)
	kind := tiers.KindOf(err)
	switch {
	case err == nil:
	case callerGone(r.caller):
		kind = tiers.KindCanceled
	case cc.guard.lostHedge():
		kind = kindHedged
	}
	at := Attempt{Tier: cc.tier, Model: cc.id, Outcome: OutcomeSuccess, Duration: elapsed, Usage: u}
	if err != nil {
		at.Outcome, at.Error = string(kind), describe(err)
	}
	o := outcomeOf(kind)
	if kind == kindHedged {
		o = hedgedOutcome(r.p.models[cc.id], cc.permit.Probe(), elapsed)
	}
	cc.permit.ReportReason(o, elapsed, reasonOf(kind, at.Error))
	endModel(span, at)
	if kind == tiers.KindRateLimited {
		r.p.coolDown(cc.id, err, cc.cooldown)
	}
	r.settle(cc.guard, cc, at)
}

// coolDown starts the cooldown of model id after its 429 err: the
// Retry-After it carries, else the candidate's cooldown, else the
// pipeline's. A cooldown that lasts longer than the one in force is
// announced to the cluster, if there is one.
func (p *Pipeline) coolDown(id string, err error, cooldown time.Duration) {
	d := cooldown
	var te *tiers.Error
	if errors.As(err, &te) && te.RetryAfter > 0 {
		d = te.RetryAfter
	}
	if d <= 0 {
		d = p.cooldown
	}
	until := p.clock.Now().Add(d)
	if p.cool.set(id, until) && p.cluster != nil {
		p.cluster.ShareCooldown(id, until)
	}
}

// cooldowns remembers, per model candidate, until when it is skipped after
// a 429. It is safe for concurrent use.
type cooldowns struct {
	mu    sync.Mutex // guards until
	until map[string]time.Time
	n     atomic.Int32 // len(until), read without the lock
}

// active reports whether model id is cooling down at the time now
// returns. With no model cooling down, it neither locks nor reads the
// clock.
func (c *cooldowns) active(id string, now func() time.Time) bool {
	if c.n.Load() == 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.until[id]
	if ok && !now().Before(t) {
		delete(c.until, id)
		c.n.Store(int32(len(c.until)))
		return false
	}
	return ok
}

// list returns the models cooling down at now, by name.
func (c *cooldowns) list(now time.Time) []CooldownStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []CooldownStatus
	for id, t := range c.until {
		if now.Before(t) {
			out = append(out, CooldownStatus{Model: id, Until: t})
		}
	}
	slices.SortFunc(out, func(a, b CooldownStatus) int { return strings.Compare(a.Model, b.Model) })
	return out
}

// end ends the cooldown of id, reporting whether it was active at now.
func (c *cooldowns) end(id string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.until[id]
	if ok {
		delete(c.until, id)
		c.n.Store(int32(len(c.until)))
	}
	return ok && now.Before(t)
}

// set makes id cool down until until, unless it already does for longer,
// and reports whether it changed anything.
func (c *cooldowns) set(id string, until time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !until.After(c.until[id]) {
		return false
	}
	c.until[id] = until
	c.n.Store(int32(len(c.until)))
	return true
}
