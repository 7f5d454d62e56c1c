package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// Defaults of Probe.
const (
	DefaultProbeInterval = 10 * time.Second
	DefaultProbeTimeout  = 5 * time.Second
)

// Probe configures the active probing of one model (Options.Probes): its
// breaker "model/<Model>" leaves its half-open probes to a background
// prober, so that no question is used to test the model's recovery.
// Questions skip the model while it is half-open (breaker_open).
type Probe struct {
	Model    string        // the model's ID, as its candidate names it
	Interval time.Duration // probes are at least this far apart; default 10s
	Timeout  time.Duration // bounds one probe request; default 5s
	// Send makes the smallest request of the model's kind (a one-token
	// chat completion, one short embedding, a one-document rerank) and
	// returns its error, which is classified as a question's call is.
	Send func(ctx context.Context) error
}

// ProbeStatus is the prober of one model, for Status.
type ProbeStatus struct {
	Model     string        `json:"model"`
	Interval  time.Duration `json:"interval"`
	Timeout   time.Duration `json:"timeout"`
	Probes    uint64        `json:"probes"`               // probe requests sent
	LastAt    time.Time     `json:"last_at,omitzero"`     // when the last one was sent
	LastOut   string        `json:"last_outcome"`         // its outcome: success or a failure kind; "" before the first
	LastError string        `json:"last_error,omitempty"` // a short, secret-free description of its failure
}

// prober probes one model's breaker while it is half-open. One goroutine
// runs it, from New to Close: when the open time ends it takes the probe
// permit (with a Store, under the cluster-wide lease), sends Probe.Send
// under Probe.Timeout at most once per Probe.Interval and reports the
// outcome as the probe's. Each probe is an EventProbe; Status lists the
// probers.
type prober struct {
	p    *Pipeline
	cfg  Probe // defaults filled in
	b    *breaker.Breaker
	wake chan struct{} // buffered 1: the breaker changed state

	mu     sync.Mutex // guards the fields below
	status ProbeStatus
}

// newProbers checks ps and returns their probers by model ID, without
// breakers yet (startProbers gives them theirs).
func newProbers(ps []Probe) (map[string]*prober, error) {
	out := map[string]*prober{}
	for i, c := range ps {
		if c.Model == "" || c.Send == nil || out[c.Model] != nil {
			return nil, fmt.Errorf("pipeline: probes[%d]: model %q empty or probed twice, or no Send", i, c.Model)
		}
		c.Interval = cmp.Or(max(c.Interval, 0), DefaultProbeInterval)
		c.Timeout = cmp.Or(max(c.Timeout, 0), DefaultProbeTimeout)
		out[c.Model] = &prober{cfg: c, wake: make(chan struct{}, 1),
			status: ProbeStatus{Model: c.Model, Interval: c.Interval, Timeout: c.Timeout}}
	}
	return out, nil
}

// modelConfig is breakerConfig for the breaker of model id: a probed
// model's breaker leaves its probes to the prober, whose request timeout
// is then the probe permit's, unless c sets one.
func (p *Pipeline) modelConfig(id string, c breaker.Config) breaker.Config {
	if pr := p.probers[id]; pr != nil {
		c.ActiveProbes = true
		c.ProbeTimeout = cmp.Or(c.ProbeTimeout, pr.cfg.Timeout)
	}
	return p.breakerConfig(c)
}

// startProbers gives each prober its model's breaker (a new one, shared
// through store, for a model no stage calls) and starts it.
func (p *Pipeline) startProbers(store breaker.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	p.stopProbers = cancel
	for id, pr := range p.probers {
		pr.p = p
		pr.b = p.auxBreaker(id, store)
		p.probing.Add(1)
		go pr.run(ctx)
	}
}

// pokeProber wakes the prober of breaker name, if it has one.
func (p *Pipeline) pokeProber(name string) {
	id, ok := strings.CutPrefix(name, "model/")
	if pr := p.probers[id]; ok && pr != nil {
		select {
		case pr.wake <- struct{}{}:
		default:
		}
	}
}

// run probes until ctx is done: it waits while the breaker is closed, and
// while it is open until the open time ends; while half-open it takes the
// probe permit, at most once per interval.
func (pr *prober) run(ctx context.Context) {
	defer pr.p.probing.Done()
	for {
		// The waits run on real time and are computed on the pipeline's
		// clock; at most one interval, even while the breaker is closed,
		// so that a clock moved by hand, or a state change that did not
		// poke the prober (a breaker with a callback of its own), is seen
		// within it.
		wait := pr.step(ctx)
		if wait <= 0 {
			wait = pr.cfg.Interval
		}
		timer := time.NewTimer(min(wait, pr.cfg.Interval))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-pr.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// step probes if it is time to and returns how long to wait before the
// next step; 0 means until the breaker changes state (or an interval).
func (pr *prober) step(ctx context.Context) time.Duration {
	now := pr.p.clock.Now()
	s := pr.b.Snapshot()
	switch s.State {
	case breaker.StateClosed:
		return 0
	case breaker.StateOpen:
		return max(s.OpenUntil.Sub(now), time.Millisecond)
	}
	pr.mu.Lock()
	last := pr.status.LastAt
	pr.mu.Unlock()
	if next := last.Add(pr.cfg.Interval); !last.IsZero() && now.Before(next) {
		return next.Sub(now)
	}
	permit, err := pr.b.AllowProbe()
	switch {
	case errors.Is(err, breaker.ErrNoProbe):
		return 0
	case err != nil: // another instance probes, or the breaker opened again
		return pr.cfg.Interval
	}
	pr.probe(ctx, &permit, now)
	return pr.cfg.Interval
}

// probe sends one probe request under permit, at now, and reports its
// outcome to the breaker, the status and the observer.
func (pr *prober) probe(ctx context.Context, permit *breaker.Permit, now time.Time) {
	pctx, cancel := context.WithTimeout(ctx, pr.cfg.Timeout)
	start := pr.p.clock.Now()
	err := pr.cfg.Send(pctx)
	cancel()
	elapsed := pr.p.clock.Now().Sub(start)
	kind := tiers.KindOf(err)
	if err != nil && ctx.Err() != nil {
		kind = tiers.KindCanceled // the pipeline is closing: not the model's fault
	}
	at := Attempt{Tier: tiers.ProbeTier, Model: pr.cfg.Model, Outcome: OutcomeSuccess, Duration: elapsed}
	if err != nil {
		at.Outcome, at.Error = string(kind), describe(err)
	}
	permit.ReportReason(outcomeOf(kind), elapsed, reasonOf(kind, at.Error))
	pr.mu.Lock()
	pr.status.Probes++
	pr.status.LastAt, pr.status.LastOut, pr.status.LastError = now, at.Outcome, at.Error
	pr.mu.Unlock()
	pr.p.emit(Event{Kind: EventProbe, Breaker: pr.b.Name(), Attempt: at,
		From: breaker.StateHalfOpen, To: pr.b.State()})
}

// probeStatus returns the status of every prober, by model ID.
func (p *Pipeline) probeStatus() []ProbeStatus {
	out := make([]ProbeStatus, 0, len(p.probers))
	for _, pr := range p.probers {
		pr.mu.Lock()
		out = append(out, pr.status)
		pr.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b ProbeStatus) int { return strings.Compare(a.Model, b.Model) })
	return out
}
