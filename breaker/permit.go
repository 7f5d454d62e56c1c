package breaker

import (
	"context"
	"errors"
	"time"
)

// Permit is the right to make one call, returned by Breaker.Allow. Report
// its outcome exactly once with Done or Report; later reports are no-ops.
// Every permit must be reported: while slow calls are tracked, one never
// reported stays in flight until the period ends and counts as slow, so
// leaked permits trip the breaker.
// A Permit is a value and costs no allocation; do not copy it after use
// (go vet's copylocks check catches copies). The zero Permit is inert. A
// Permit is not safe for concurrent use: one goroutine owns it.
type Permit struct {
	_     noCopy
	b     *Breaker
	p     *period
	start time.Duration // when Allow granted it (see Breaker.since); set when slow calls are measured
	probe uint64        // half-open probe id; 0 for a CLOSED permit
	done  bool
	wait  bool // out of the in-flight count until Begin (see Wait)
}

// noCopy makes go vet report copies of the struct holding it.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Probe reports whether the permit is a half-open probe.
func (p *Permit) Probe() bool { return p.probe != 0 }

// Wait takes a CLOSED permit out of the in-flight count while its call
// waits to start (for a bulkhead's slot, say), so that the wait does not
// make it slow; Begin ends the wait. A permit reported while waiting is
// never slow: reported Ignored, a call that never started counts nowhere.
func (p *Permit) Wait() {
	if p.b == nil || p.done || p.wait || p.probe != 0 {
		return
	}
	p.wait = true
	if live := p.p.w.live; live != nil && p.b.cur.Load() == p.p {
		live.end(p.start)
	}
}

// Begin ends the wait of Wait: the call starts now. The permit is counted
// in flight again from now, and Done measures its duration from now. It is
// a no-op unless the permit waits.
func (p *Permit) Begin() {
	if !p.wait || p.done {
		return
	}
	p.wait = false
	b := p.b
	if !b.needStart {
		return
	}
	p.start = b.since()
	if live := p.p.w.live; live != nil && b.cur.Load() == p.p {
		var turned int64
		p.start, turned = live.begin(p.start)
		if turned > 0 {
			b.judgeInFlight(p.p, p.start)
		}
	}
}

// Done reports the call's outcome, measuring its duration with the breaker's
// clock from Allow (or Begin). A second report is a no-op.
func (p *Permit) Done(o Outcome) { p.DoneReason(o, Reason{}) }

// DoneReason is Done with the caller's reason for the outcome, which the
// breaker keeps (see LastTrip) if this outcome trips it.
func (p *Permit) DoneReason(o Outcome, why Reason) {
	if p.b == nil || p.done {
		return
	}
	p.done = true
	b := p.b
	var at, elapsed time.Duration
	if b.needStart || b.timeWin {
		at = b.since()
		elapsed = at - p.start
	}
	b.report(p, o, elapsed, at, why)
}

// Report reports the call's outcome with a duration the caller measured
// itself (for a stream: until its end). A second report is a no-op.
func (p *Permit) Report(o Outcome, elapsed time.Duration) { p.ReportReason(o, elapsed, Reason{}) }

// ReportReason is Report with the caller's reason for the outcome, which
// the breaker keeps (see LastTrip) if this outcome trips it.
func (p *Permit) ReportReason(o Outcome, elapsed time.Duration, why Reason) {
	if p.b == nil || p.done {
		return
	}
	p.done = true
	b := p.b
	var at time.Duration
	if b.timeWin || p.p.w != nil && p.p.w.live != nil {
		at = b.since()
	}
	b.report(p, o, elapsed, at, why)
}

// report settles permit pm. at (see since) is zero unless the window or
// the in-flight count needs it.
//
// With calls in flight counted, a call that ran for SlowCallDuration (or
// was counted slow while in flight) is slow by definition: a success is a
// slow success whatever elapsed says, an ignored outcome counts as one
// too, and a failure replaces the slow mark. A permit reported while it
// waits (see Wait) is never slow: its call has not started.
func (b *Breaker) report(pm *Permit, o Outcome, elapsed, at time.Duration, why Reason) {
	p := pm.p
	if pm.probe != 0 {
		b.reportProbe(p, pm.probe, o, why)
		return
	}
	if b.cur.Load() != p {
		return // belongs to an earlier period
	}
	slow := b.needStart && elapsed >= b.cfg.SlowCallDuration && !pm.wait
	if live := p.w.live; live != nil {
		turned := live.sweep(at)
		if !pm.wait {
			slow = live.end(pm.start) || slow
		}
		if o >= Ignored && slow {
			o = Success
		} else if o >= Ignored && turned > 0 {
			b.judgeInFlight(p, at)
		}
	}
	if o >= Ignored {
		return // counts nowhere
	}
	slow = slow && o == Success
	trip := p.w.record(o == Failure, slow, at, &b.cfg)
	if b.rec != nil {
		b.rec.Record(o, slow)
	} else if b.store != nil {
		b.store.Record(b.name, o, slow)
	}
	if trip {
		b.tripFrom(p, slow, why)
	}
}

// Classifier maps a call's error to the outcome its breaker hears.
type Classifier func(err error) Outcome

// Classify returns a Classifier for which a nil error is Success,
// context.Canceled and any error matching (errors.Is) one of ignore are
// Ignored, and every other error, context.DeadlineExceeded included, is a
// Failure.
func Classify(ignore ...error) Classifier {
	ignore = append([]error(nil), ignore...)
	return func(err error) Outcome {
		if err == nil {
			return Success
		}
		if errors.Is(err, context.Canceled) {
			return Ignored
		}
		for _, target := range ignore {
			if target != nil && errors.Is(err, target) {
				return Ignored
			}
		}
		return Failure
	}
}

// defaultClassify is the Classifier of Do.
var defaultClassify = Classify()

// Do calls fn if the breaker permits and reports its outcome as classified by
// Classify(): nil is a success, a cancelled context is ignored, any other
// error is a failure. It returns ErrOpen or ErrTooManyProbes without calling
// fn when rejected, ctx.Err() without calling fn when ctx is already done,
// and otherwise fn's error unchanged. If fn panics, the call counts as a
// failure and the panic continues.
func (b *Breaker) Do(ctx context.Context, fn func(context.Context) error) error {
	return b.DoWith(ctx, defaultClassify, fn)
}

// DoWith is Do with the caller's Classifier; nil means Classify().
func (b *Breaker) DoWith(ctx context.Context, classify Classifier, fn func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if classify == nil {
		classify = defaultClassify
	}
	permit, err := b.Allow()
	if err != nil {
		return err
	}
	defer permit.Done(Failure) // no-op unless fn panicked
	err = fn(ctx)
	permit.Done(classify(err))
	return err
}
