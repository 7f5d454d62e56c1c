package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// A hedged stage (Stage.HedgeAfter) that has not answered after that long
// (streaming: sent no text) starts the next model stage beside it, with
// what is left of the question's budget; the first answer (streaming: the
// first text) wins and the other call is cancelled. The loser's attempts
// end as "hedged": a cancelled call its breakers count as slow if it ran
// past their slow_call_duration and ignore otherwise (it did not fail).
// When neither call answers, the stage loop goes on after the hedged
// stage, leaving out the hedging one unless a guard skipped its call.
// A hedge the budget (hedgeBudget) refuses is asked again every
// hedgeRecheck while the call runs. Both calls run on goroutines of their
// own; the question's goroutine waits for them, and sends the winner's
// text, so that a stream's receiver is still called on it. The question
// returns only when both have ended. A panic on a call (a bug of the
// pipeline's: the tiers' are caught where they are called) cancels the
// other and, once both have ended, is raised on the question's goroutine,
// which ends the question with it as its error.

// OutcomeHedged is the Outcome of an attempt cancelled because the other
// call of its hedge answered first.
const OutcomeHedged = "hedged"

// kindHedged is the Kind a hedge's losing call is classified as.
const kindHedged tiers.Kind = OutcomeHedged

// errHedgeLost ends a stream of the call that lost its hedge.
var errHedgeLost = errors.New("pipeline: the hedge's other call answered first")

// hedgeLeg is one of the two calls of a hedge.
type hedgeLeg struct {
	s        *stage
	c        call
	g        candidateGuard // the leg's own: the legs run at once
	ctx      context.Context
	cancel   context.CancelFunc
	emit     func(tiers.Delta) error // the stage's own Emit, called on the question's goroutine
	ack      chan error              // answers the leg's Emit
	panicked error                   // a panic that ended the call, with its stack; set before its end is sent
}

// legEnd is how a leg's call ended.
type legEnd struct {
	l   *hedgeLeg
	a   tiers.Answer
	err error
}

// legDelta is a piece of text a leg's stream sends.
type legDelta struct {
	l *hedgeLeg
	d tiers.Delta
}

// hedge is one hedged stage call of question qn.
type hedge struct {
	qn     question     // a copy: a pointer to the stage loop's would move it to the heap
	legs   [2]*hedgeLeg // [0] the hedged stage's, [1] the hedge's once started
	ends   chan legEnd  // room for both: a leg never waits to end
	deltas chan legDelta
	winner *hedgeLeg // the leg whose answer or text came first
}

// readyHedges gives each hedged stage the stage hedging it and its
// budget.
func (p *Pipeline) readyHedges() {
	for i, s := range p.stages {
		if s.hedgeTo = p.hedgeTo(i); s.hedgeTo != nil {
			s.hb = newHedgeBudget(s.HedgeBudget, s.breaker.Config())
		}
	}
}

// hedgeTo returns the stage hedging stage i, the next model stage after
// it, or nil when stage i is not hedged.
func (p *Pipeline) hedgeTo(i int) *stage {
	if p.stages[i].HedgeAfter <= 0 {
		return nil
	}
	for _, n := range p.stages[i+1:] {
		if n.Model {
			return n
		}
	}
	return nil
}

// hedged calls stage s hedged by stage to. It returns the answer (or the
// failure) that ends the hedge, the stage that gave it, and whether the
// hedge stage was called, not skipped by a guard (the stage loop then
// skips it).
func (qn *question) hedged(s, to *stage) (a tiers.Answer, from *stage, tried bool, err error) {
	h := &hedge{qn: *qn, ends: make(chan legEnd, 2), deltas: make(chan legDelta)}
	t0 := time.Now()
	h.start(0, s)
	timer := time.NewTimer(s.HedgeAfter)
	defer timer.Stop()
	var last legEnd
	var aborted error // the first leg's panic
	for running := 1; running > 0; {
		select {
		case <-timer.C:
			switch {
			case h.winner != nil || aborted != nil || !qn.run.stream.wants(to):
			case s.hb.take(s.breaker):
				h.start(1, to)
				running++
			default: // over the budget: asked again while the call runs
				timer.Reset(hedgeRecheck(s.HedgeAfter))
			}
		case d := <-h.deltas:
			h.deliver(d)
		case e := <-h.ends:
			running--
			if e.l.panicked != nil && aborted == nil {
				aborted = e.l.panicked
				h.cancel()
			}
			switch {
			case e.l == h.legs[1]:
				tried = e.err != errSkipped // a skipped hedge leaves the stage to be asked
			case e.err != errSkipped:
				s.hb.record()
			}
			if e.err == nil && h.winner == nil {
				h.win(e.l)
			}
			// The winner's end ends the hedge; without one, the first
			// call that was made.
			if e.l == h.winner || h.winner == nil && (last.l == nil || last.err == errSkipped) {
				last = e
			}
		}
	}
	if tried {
		qn.run.p.emit(Event{Kind: EventHedge, Tenant: qn.q.Tenant, Tier: s.name, Reason: wonReason(h.winner == h.legs[1]),
			Attempt: Attempt{Tier: s.name, Duration: time.Since(t0)}})
	}
	if aborted != nil {
		panic(aborted)
	}
	return last.a, last.l.s, tried, last.err
}

// hedgeRecheck is how long a hedge the budget refused waits before it
// asks again: a tenth of hedge_after, at least 10ms. The budget opens
// once the stage's breaker hears of trouble (a slow or failed call).
func hedgeRecheck(after time.Duration) time.Duration { return max(after/10, 10*time.Millisecond) }

// wonReason is the Reason of an EventHedge: "true" when the hedge won.
func wonReason(won bool) string {
	if won {
		return "true"
	}
	return "false"
}

// start starts leg i, a call of stage s, on a goroutine of its own.
func (h *hedge) start(i int, s *stage) {
	qn := h.qn
	l := &hedgeLeg{s: s}
	l.g = candidateGuard{run: qn.run, stage: s}
	l.ctx, l.cancel = context.WithCancel(qn.ctx)
	l.c = call{question: qn, stage: s, guard: &l.g, sr: qn.run.stream.request(s)}
	if l.c.sr != nil {
		l.emit, l.ack = l.c.sr.Emit, make(chan error)
		l.c.sr.Emit = func(d tiers.Delta) error { return h.send(l, d) }
	}
	h.legs[i] = l
	go func() {
		defer l.cancel()
		a, err := l.call(&qn)
		h.ends <- legEnd{l: l, a: a, err: err}
	}()
}

// call makes leg l's call as one of qn's. A panic ends it with l.panicked,
// the panic with its stack, as its error.
func (l *hedgeLeg) call(qn *question) (a tiers.Answer, err error) {
	defer func() {
		if v := recover(); v != nil {
			l.panicked = fmt.Errorf("hedge call panicked: %v\n%s", v, debug.Stack())
			a, err = tiers.Answer{}, l.panicked
		}
	}()
	if qn.run.p.tracer != nil {
		return qn.traced(l.ctx, l.s, &l.c)
	}
	return l.s.guard.call(l.ctx, &l.c)
}

// cancel cancels the hedge's calls.
func (h *hedge) cancel() {
	for _, l := range h.legs {
		if l != nil {
			l.cancel()
		}
	}
}

// send passes d, text of leg l's stream, to the question's goroutine and
// returns what sending it there returned.
func (h *hedge) send(l *hedgeLeg, d tiers.Delta) error {
	select {
	case h.deltas <- legDelta{l: l, d: d}:
	case <-l.ctx.Done():
		return errHedgeLost
	}
	return <-l.ack
}

// deliver sends d to the stream's receiver if its leg has won the hedge,
// the first text winning it, and answers the leg.
func (h *hedge) deliver(d legDelta) {
	if h.winner == nil {
		h.win(d.l)
	}
	if d.l != h.winner {
		d.l.ack <- errHedgeLost
		return
	}
	d.l.ack <- d.l.emit(d.d)
}

// win makes l the hedge's winner and cancels the other leg.
func (h *hedge) win(l *hedgeLeg) {
	h.winner = l
	for _, o := range h.legs {
		if o != nil && o != l {
			o.g.lost.Store(true)
			o.cancel()
		}
	}
}

// hedgedOutcome is what breaker b hears of a call cancelled after elapsed
// because the other call of its hedge won: slow if it ran past b's
// slow_call_duration (reported as a success of that length, which b
// counts as slow), else nothing. A half-open probe that ran past it is a
// failure: a success, however slow, would close the breaker of a model
// that has not answered.
func hedgedOutcome(b *breaker.Breaker, probe bool, elapsed time.Duration) breaker.Outcome {
	if b == nil {
		return breaker.Ignored
	}
	cfg := b.Config()
	if cfg.SlowCallDuration <= 0 || elapsed < cfg.SlowCallDuration {
		return breaker.Ignored
	}
	switch {
	case probe:
		return breaker.Failure
	case cfg.SlowCallRate > 0:
		return breaker.Success
	}
	return breaker.Ignored
}

// lostHedge reports whether guard g's call was cancelled because the
// other call of its hedge won.
func (g *candidateGuard) lostHedge() bool { return g != nil && g.lost.Load() }
