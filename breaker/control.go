package breaker

import (
	"slices"
	"time"
)

// setLocked replaces the current period p with a new one in state to and
// queues the change for delivery. b.mu must be held. For OPEN, openUntil is
// the end of the open time. publish says whether the Store hears of it.
func (b *Breaker) setLocked(p *period, to State, openUntil time.Time, publish bool) *period {
	n := &period{state: to, gen: p.gen + 1}
	switch to {
	case StateClosed:
		n.w = b.newPeriodWindow()
		b.openFor = b.cfg.OpenDuration
	case StateOpen:
		n.openUntil = openUntil
		b.trips++
	}
	b.cur.Store(n)
	if p.state != to {
		b.pending = append(b.pending, event{
			from:    p.state,
			to:      to,
			shared:  Shared{State: to, OpenUntil: openUntil, Origin: b.id},
			publish: publish && b.store != nil,
		})
	}
	return n
}

// extendLocked keeps an OPEN period p open until at least until, and
// reports whether it moved. The generation stays. b.mu must be held.
func (b *Breaker) extendLocked(p *period, until time.Time, publish bool) bool {
	if !until.After(p.openUntil) {
		return false
	}
	b.cur.Store(&period{state: StateOpen, gen: p.gen, openUntil: until})
	if publish && b.store != nil {
		b.pending = append(b.pending, event{
			from: StateOpen, to: StateOpen, publish: true,
			shared: Shared{State: StateOpen, OpenUntil: until, Origin: b.id},
		})
	}
	return true
}

// tripFrom opens the breaker if CLOSED period p is still current, on an
// outcome (a slow success if slow, else a failure) reported for why.
func (b *Breaker) tripFrom(p *period, slow bool, why Reason) {
	now := b.now()
	b.mu.Lock()
	if b.cur.Load() != p {
		b.mu.Unlock()
		return
	}
	b.noteTripLocked(b.tripCause(p, slow, now), why, now)
	b.setLocked(p, StateOpen, now.Add(b.openFor), true)
	b.mu.Unlock()
	b.deliver()
}

// Trip forces the breaker OPEN now, for the current open duration, with
// CauseManual as its reason. A breaker already open stays open at least
// that long from now.
func (b *Breaker) Trip() { b.TripBecause(CauseManual, Reason{}) }

// Reset forces the breaker CLOSED with an empty window and the base open
// duration. Outcomes of permits granted before Reset are ignored.
func (b *Breaker) Reset() {
	b.mu.Lock()
	b.setLocked(b.cur.Load(), StateClosed, time.Time{}, true)
	b.mu.Unlock()
	b.deliver()
}

// Apply adopts a state announced by another process; Stores call it when
// they hear of a remote change. It does not announce the change back to the
// Store, and it ignores announcements that carry this breaker's own Origin.
// Shared{State: StateOpen} opens the breaker until OpenUntil (or for the
// current open duration when OpenUntil is zero; an OpenUntil already past
// is ignored), StateHalfOpen ends a local open time early, and StateClosed
// closes the breaker. A breaker that is OPEN or HALF_OPEN when it hears of
// an open time longer than its own open duration takes that time (up to
// MaxOpenDuration) as its open duration, so that OpenBackoff grows the open
// time on failed probes made by any instance; a CLOSED breaker, which hears
// of a fresh trip, keeps OpenDuration.
func (b *Breaker) Apply(s Shared) {
	if s.Origin != 0 && s.Origin == b.id {
		return
	}
	now := b.now()
	b.mu.Lock()
	p, _ := b.advanceLocked(now)
	switch s.State {
	case StateOpen:
		until := s.OpenUntil
		if until.IsZero() {
			until = now.Add(b.openFor)
		}
		if !until.After(now) {
			break
		}
		if p.state != StateClosed {
			// An open time announced while this breaker is open or
			// half-open follows a failed probe elsewhere (or extends the
			// open time): take it as the open duration to grow from, so
			// that backoff counts the cluster's failed probes. A CLOSED
			// breaker hears a fresh trip, which must not grow it.
			b.openFor = max(b.openFor, min(until.Sub(now), b.cfg.MaxOpenDuration))
		}
		if p.state == StateOpen {
			b.extendLocked(p, until, false)
		} else {
			b.noteTripLocked(CauseRemote, Reason{}, now)
			b.setLocked(p, StateOpen, until, false)
		}
	case StateHalfOpen:
		if p.state == StateOpen {
			b.setLocked(p, StateHalfOpen, time.Time{}, false)
		}
	case StateClosed:
		if p.state != StateClosed {
			b.setLocked(p, StateClosed, time.Time{}, false)
		}
	}
	b.mu.Unlock()
	b.deliver()
}

// reportProbe settles half-open probe id of period p, whose outcome o was
// reported for why.
func (b *Breaker) reportProbe(p *period, id uint64, o Outcome, why Reason) {
	now := b.now()
	b.mu.Lock()
	if b.cur.Load() != p {
		b.mu.Unlock()
		return // an earlier period's probe
	}
	deadline, held := p.removeLocked(id)
	if !held || !now.Before(deadline) {
		b.mu.Unlock()
		return // void: its slot was (or now is) freed, the late report is ignored
	}
	switch o {
	case Success:
		p.successes++
		if p.successes >= b.cfg.SuccessThreshold {
			b.setLocked(p, StateClosed, time.Time{}, true)
		}
	case Failure:
		b.openFor = scale(b.openFor, b.cfg.OpenBackoff, b.cfg.MaxOpenDuration)
		b.noteTripLocked(CauseProbeFailed, why, now)
		b.setLocked(p, StateOpen, now.Add(b.openFor), true)
	}
	b.mu.Unlock()
	b.deliver()
}

// deliverIf delivers pending changes if the caller queued any.
func (b *Breaker) deliverIf(changed bool) {
	if changed {
		b.deliver()
	}
}

// deliver hands pending changes to OnStateChange and the Store, in order,
// with no lock held. One goroutine delivers at a time; others leave their
// changes to it.
func (b *Breaker) deliver() {
	b.mu.Lock()
	if b.delivering || len(b.pending) == 0 {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	finished := false
	var rest []event // of the batch, not yet delivered
	defer func() {
		if !finished {
			// A listener panicked: the changes after its own go first
			// with the next delivery, so that the store still hears of
			// them. pending was taken from spare: they must not share an
			// array, or the next delivery clears changes queued meanwhile.
			b.mu.Lock()
			b.delivering = false
			b.pending = append(slices.Clone(rest), b.pending...)
			b.spare = nil
			b.mu.Unlock()
		}
	}()
	for len(b.pending) > 0 {
		batch := b.pending
		b.pending = b.spare[:0]
		b.mu.Unlock()
		for i, ev := range batch {
			rest = batch[i+1:]
			if ev.publish {
				b.store.Publish(b.name, ev.shared)
			}
			if ev.from != ev.to && b.cfg.OnStateChange != nil {
				b.cfg.OnStateChange(b.name, ev.from, ev.to)
			}
		}
		b.mu.Lock()
		clear(batch)
		b.spare = batch[:0]
	}
	b.delivering = false
	finished = true
	b.mu.Unlock()
}
