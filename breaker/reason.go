package breaker

import (
	"time"
	"unicode/utf8"
)

// Reason says why a call failed, in the caller's words, for the record a
// Breaker keeps of what tripped it. The breaker keeps it as given (Message
// cut to MaxReasonMessage bytes), so it must hold no secret: no key, no
// header, no URL with credentials.
type Reason struct {
	Kind    string // the caller's outcome kind, e.g. "timeout" or "status_5xx"
	Message string // a short description of the error
}

// MaxReasonMessage is the longest Message, in bytes, a Breaker keeps.
const MaxReasonMessage = 200

// Cause names the rule or action that tripped a Breaker.
type Cause string

// The causes of a trip.
const (
	// CauseConsecutiveFailures: Config.FailureThreshold failures in a row.
	CauseConsecutiveFailures Cause = "consecutive_failures"
	// CauseFailureRate: the window's failure rate reached Config.FailureRate.
	CauseFailureRate Cause = "failure_rate"
	// CauseSlowCallRate: the window's slow-call rate reached Config.SlowCallRate.
	CauseSlowCallRate Cause = "slow_call_rate"
	// CauseProbeFailed: a half-open probe failed.
	CauseProbeFailed Cause = "probe_failed"
	// CauseManual: Trip was called.
	CauseManual Cause = "manual"
	// CauseCluster: a Store judged the cluster-wide window (TripBecause).
	CauseCluster Cause = "cluster"
	// CauseRemote: another process announced the trip (Apply).
	CauseRemote Cause = "remote"
)

// TripReason is what tripped a Breaker most recently: the rule, the
// Reason of the outcome that crossed it (empty for a trip without one), and
// when. The zero TripReason means the breaker never tripped.
type TripReason struct {
	Cause   Cause
	Kind    string
	Message string
	At      time.Time
}

// LastTrip returns what tripped the breaker most recently; it outlives the
// open period, so a closed breaker still tells why it last opened.
func (b *Breaker) LastTrip() TripReason {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastTrip
}

// TripBecause is Trip recording cause and why as the trip's reason; Stores
// call it with CauseCluster when the cluster-wide window crosses a
// threshold. A breaker already open stays open at least its open duration
// from now.
func (b *Breaker) TripBecause(cause Cause, why Reason) {
	now := b.now()
	b.mu.Lock()
	p, _ := b.advanceLocked(now)
	until := now.Add(b.openFor)
	b.noteTripLocked(cause, why, now)
	if p.state == StateOpen {
		b.extendLocked(p, until, true)
	} else {
		b.setLocked(p, StateOpen, until, true)
	}
	b.mu.Unlock()
	b.deliver()
}

// noteTripLocked records a trip at now. b.mu must be held.
func (b *Breaker) noteTripLocked(cause Cause, why Reason, now time.Time) {
	b.lastTrip = TripReason{Cause: cause, Kind: why.Kind, Message: clip(why.Message, MaxReasonMessage), At: now}
}

// tripCause names the rule that an outcome of CLOSED period p crossed:
// slow says the outcome was a slow success. b.mu must be held.
func (b *Breaker) tripCause(p *period, slow bool, now time.Time) Cause {
	if !slow && b.cfg.FailureThreshold > 0 && p.w.consec.Load() >= int64(b.cfg.FailureThreshold) {
		return CauseConsecutiveFailures
	}
	n := p.w.counts(now.Sub(b.origin))
	if b.cfg.FailureRate > 0 && n.calls > 0 && float64(n.failures)/float64(n.calls) >= b.cfg.FailureRate {
		return CauseFailureRate
	}
	return CauseSlowCallRate
}

// clip returns s cut to at most n bytes, at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1] // part of a rune cut in two
	}
	return s
}
