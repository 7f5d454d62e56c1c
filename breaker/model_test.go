package breaker_test

import (
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
)

// model is a deliberately simple, single-threaded statement of the
// breaker's rules, used as the reference in FuzzBreaker.
type model struct {
	cfg    breaker.Config
	origin time.Time

	state    breaker.State
	gen      uint64
	trips    uint64
	rejected uint64
	openFor  time.Duration
	lastTrip breaker.TripReason

	// CLOSED
	outcomes []modelOutcome // oldest first
	consec   int
	flights  map[int]*modelFlight // permits granted and not reported, by id
	nextCall int
	// OPEN
	openUntil time.Time
	// HALF_OPEN
	probes    map[int]time.Time // id -> deadline
	nextProbe int
	successes int
}

type modelOutcome struct {
	epoch      int64
	fail, slow bool
}

// modelFlight is a CLOSED permit in flight; old says it has been counted
// as slow.
type modelFlight struct {
	start time.Time
	old   bool
}

type modelPermit struct {
	gen   uint64
	probe bool
	id    int
	start time.Time
	done  bool
}

func newModel(cfg breaker.Config, now time.Time) *model {
	return &model{cfg: cfg, origin: now, openFor: cfg.OpenDuration, flights: map[int]*modelFlight{}}
}

func (m *model) set(s breaker.State, now time.Time) {
	m.state = s
	m.gen++
	m.outcomes, m.consec, m.openUntil = nil, 0, time.Time{}
	m.flights = map[int]*modelFlight{}
	m.probes, m.successes = map[int]time.Time{}, 0
	switch s {
	case breaker.StateOpen:
		m.trips++
		m.openUntil = now.Add(m.openFor)
	case breaker.StateClosed:
		m.openFor = m.cfg.OpenDuration
	}
}

// advance turns an OPEN breaker whose time is up into HALF_OPEN.
func (m *model) advance(now time.Time) {
	if m.state == breaker.StateOpen && !now.Before(m.openUntil) {
		m.set(breaker.StateHalfOpen, now)
	}
}

func (m *model) expire(now time.Time) {
	for id, dl := range m.probes {
		if !now.Before(dl) {
			delete(m.probes, id)
		}
	}
}

func (m *model) allow(now time.Time) (modelPermit, error) {
	m.sweep(now, true)
	if m.state == breaker.StateClosed {
		m.nextCall++
		if m.tracksFlights() {
			m.flights[m.nextCall] = &modelFlight{start: now}
		}
		return modelPermit{gen: m.gen, id: m.nextCall, start: now}, nil
	}
	m.advance(now)
	if m.state == breaker.StateOpen {
		m.rejected++
		return modelPermit{}, breaker.ErrOpen
	}
	m.expire(now)
	if len(m.probes) >= m.cfg.HalfOpenMaxCalls {
		m.rejected++
		return modelPermit{}, breaker.ErrTooManyProbes
	}
	m.nextProbe++
	m.probes[m.nextProbe] = now.Add(m.cfg.ProbeTimeout)
	return modelPermit{gen: m.gen, probe: true, id: m.nextProbe, start: now}, nil
}

func (m *model) report(p *modelPermit, o breaker.Outcome, elapsed time.Duration, now time.Time, why breaker.Reason) {
	if p.done {
		return
	}
	p.done = true
	if p.gen != m.gen {
		return
	}
	if p.probe {
		dl, ok := m.probes[p.id]
		delete(m.probes, p.id)
		if !ok || !now.Before(dl) {
			return
		}
		switch o {
		case breaker.Success:
			m.successes++
			if m.successes >= m.cfg.SuccessThreshold {
				m.set(breaker.StateClosed, now)
			}
		case breaker.Failure:
			grown := float64(m.openFor) * m.cfg.OpenBackoff
			m.openFor = m.cfg.MaxOpenDuration
			if grown < float64(m.cfg.MaxOpenDuration) {
				m.openFor = time.Duration(grown)
			}
			m.lastTrip = breaker.TripReason{Cause: breaker.CauseProbeFailed, Kind: why.Kind, Message: why.Message, At: now}
			m.set(breaker.StateOpen, now)
		}
		return
	}
	turned := m.sweep(now, false)
	f := m.flights[p.id]
	delete(m.flights, p.id)
	old := f != nil && f.old
	if o == breaker.Ignored {
		if turned || old {
			m.judgeFlights(now)
		}
		return
	}
	fail := o == breaker.Failure
	slow := !fail && m.cfg.SlowCallDuration > 0 && (elapsed >= m.cfg.SlowCallDuration || old)
	m.outcomes = append(m.outcomes, modelOutcome{m.epoch(now), fail, slow})
	if m.cfg.WindowDuration == 0 && len(m.outcomes) > m.cfg.Window {
		m.outcomes = m.outcomes[1:]
	}
	if fail {
		m.consec++
	} else {
		m.consec = 0
	}
	calls, failures, slows := m.counts(now)
	cause := breaker.CauseConsecutiveFailures
	switch {
	case fail && m.cfg.FailureThreshold > 0 && m.consec >= m.cfg.FailureThreshold:
	case m.cfg.Exceeded(calls, failures, slows):
		cause = breaker.CauseSlowCallRate
		if m.cfg.FailureRate > 0 && float64(failures)/float64(calls) >= m.cfg.FailureRate {
			cause = breaker.CauseFailureRate
		}
	default:
		return
	}
	m.lastTrip = breaker.TripReason{Cause: cause, Kind: why.Kind, Message: why.Message, At: now}
	m.set(breaker.StateOpen, now)
}

// tracksFlights says whether calls in flight are counted slow.
func (m *model) tracksFlights() bool { return m.cfg.SlowCallDuration > 0 && m.cfg.SlowCallRate > 0 }

// slice is the number of the in-flight slice holding now: the slow-call
// duration is cut in eight slices of at least a millisecond, and a call
// counts as slow once it started a whole duration plus one slice before
// the current slice began.
func (m *model) slice(now time.Time) (slice, age int64) {
	g := max(m.cfg.SlowCallDuration/8, time.Millisecond)
	age = int64((m.cfg.SlowCallDuration+g-1)/g) + 1
	return int64(now.Sub(m.origin) / g), age
}

// sweep marks the calls in flight that have turned slow by now and
// reports whether there were any; if judge, such calls are judged at once.
func (m *model) sweep(now time.Time, judge bool) bool {
	if m.state != breaker.StateClosed || !m.tracksFlights() {
		return false
	}
	h, age := m.slice(now)
	turned := false
	for _, f := range m.flights {
		if s, _ := m.slice(f.start); !f.old && s <= h-age {
			f.old, turned = true, true
		}
	}
	if turned && judge {
		m.judgeFlights(now)
	}
	return turned
}

// judgeFlights trips the breaker if the window, with the calls in flight
// counted slow, crosses a rate.
func (m *model) judgeFlights(now time.Time) {
	calls, failures, slows := m.counts(now)
	if !m.cfg.Exceeded(calls, failures, slows) {
		return
	}
	cause := breaker.CauseSlowCallRate
	if m.cfg.FailureRate > 0 && float64(failures)/float64(calls) >= m.cfg.FailureRate {
		cause = breaker.CauseFailureRate
	}
	m.lastTrip = breaker.TripReason{Cause: cause, Kind: "slow_in_flight", Message: "calls in flight for slow_call_duration", At: now}
	m.set(breaker.StateOpen, now)
}

// slowInFlight counts the calls in flight counted slow.
func (m *model) slowInFlight() int {
	n := 0
	for _, f := range m.flights {
		if f.old {
			n++
		}
	}
	return n
}

func (m *model) epoch(now time.Time) int64 {
	if m.cfg.WindowDuration == 0 {
		return 0
	}
	width := int64(m.cfg.WindowDuration) / int64(m.cfg.WindowBuckets)
	return int64(now.Sub(m.origin)) / width
}

func (m *model) counts(now time.Time) (calls, failures, slow int) {
	oldest := m.epoch(now) - int64(m.cfg.WindowBuckets)
	for _, x := range m.outcomes {
		if m.cfg.WindowDuration > 0 && x.epoch <= oldest {
			continue
		}
		calls++
		if x.fail {
			failures++
		}
		if x.slow {
			slow++
		}
	}
	n := m.slowInFlight()
	return calls + n, failures, slow + n
}

func (m *model) trip(now time.Time) {
	m.advance(now)
	m.lastTrip = breaker.TripReason{Cause: breaker.CauseManual, At: now}
	if m.state != breaker.StateOpen {
		m.set(breaker.StateOpen, now)
	} else if until := now.Add(m.openFor); until.After(m.openUntil) {
		m.openUntil = until
	}
}

func (m *model) reset() { m.set(breaker.StateClosed, time.Time{}) }

func (m *model) check(t *testing.T, at string, s breaker.Snapshot, now time.Time) {
	t.Helper()
	m.sweep(now, true)
	m.advance(now)
	want := breaker.Snapshot{
		Name: "fuzz", State: m.state, Generation: m.gen, Trips: m.trips, Rejected: m.rejected,
		OpenUntil: m.openUntil, LastTrip: m.lastTrip,
	}
	switch m.state {
	case breaker.StateClosed:
		want.Calls, want.Failures, want.SlowCalls = m.counts(now)
		want.ConsecutiveFailures = m.consec
		want.SlowInFlight = m.slowInFlight()
	case breaker.StateHalfOpen:
		m.expire(now)
		want.ProbesInFlight = len(m.probes)
		want.Calls = m.successes
	}
	if want.Calls > 0 {
		want.FailureRate = float64(want.Failures) / float64(want.Calls)
		want.SlowCallRate = float64(want.SlowCalls) / float64(want.Calls)
	}
	if s != want {
		t.Fatalf("%s:\n got %+v\nwant %+v\nconfig %+v", at, s, want, m.cfg)
	}
}
