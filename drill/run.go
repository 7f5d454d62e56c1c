package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// samplePeriod is how often goroutines and heap are sampled.
const samplePeriod = 50 * time.Millisecond

// MaxSpeed is the highest Options.Speed Run accepts.
const MaxSpeed = 1000

// Options configures Run. Zero fields take the defaults written beside
// them. Run does not modify it.
type Options struct {
	Scenario *Scenario
	// Settings are the protection settings to play, one after another;
	// default DefaultSettings, and SettingHedged after them when the
	// scenario's configuration hedges a tier. They cannot be set with
	// Target.
	Settings []string
	// Speed divides every duration of the scenario and multiplies its
	// rates; default 1, at most MaxSpeed.
	Speed float64
	// Target, if set, is the base URL of a running ragfuse server whose
	// POST /v1/ask is driven instead of an in-process pipeline. The
	// scenario's faults are not injected then.
	Target string
	// APIKey, if set, is sent to Target as a bearer token (it is never
	// written to the report), and the scenario's tenants are not sent:
	// the key decides the tenant. It needs Target.
	APIKey string
	// Client sends the requests to Target; nil means a new http.Client.
	Client *http.Client
	// Progress, if set, receives a line every ProgressEvery while a
	// setting plays and one when it ends: the setting, the scenario time
	// elapsed of its total (warm-up included), the questions answered so
	// far by source, and each breaker's state.
	Progress io.Writer
	// ProgressEvery is the real time between progress lines; default
	// DefaultProgressEvery.
	ProgressEvery time.Duration
}

// An OptionError is an option Run refuses: Option names the field of
// Options, Msg says what is wrong with it.
type OptionError struct{ Option, Msg string }

func (e *OptionError) Error() string { return "drill: " + e.Option + " " + e.Msg }

// Check returns an *OptionError for the first option Run would refuse,
// reading nothing: the scenario is not checked.
func (o Options) Check() error {
	if o.Speed != 0 && !(o.Speed > 0 && o.Speed <= MaxSpeed) { // !(…) refuses NaN too
		return &OptionError{"speed", fmt.Sprintf("must be in (0, %d]", MaxSpeed)}
	}
	for _, s := range o.Settings {
		if !slices.Contains(AllSettings, s) {
			return &OptionError{"settings", fmt.Sprintf("has an unknown setting %q (want %s)", s, strings.Join(AllSettings, ", "))}
		}
	}
	if o.Target == "" {
		if o.APIKey != "" {
			return &OptionError{"api_key", "needs a target: an in-process drill asks no server"}
		}
		return nil
	}
	if len(o.Settings) > 0 {
		return &OptionError{"settings", "cannot be used with a target: a running server plays the protections of its own configuration"}
	}
	if u, err := url.Parse(o.Target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &OptionError{"target", "must be an http or https URL, e.g. http://127.0.0.1:8080"}
	}
	return nil
}

// Run plays o.Scenario once per protection setting and returns the report.
// It returns early with ctx.Err() when ctx is cancelled.
func Run(ctx context.Context, o Options) (*Report, error) {
	sc := o.Scenario
	if sc == nil {
		return nil, errors.New("drill: no scenario")
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if err := o.Check(); err != nil {
		return nil, err
	}
	speed := o.Speed
	if speed == 0 {
		speed = 1
	}
	qpath := sc.Questions
	if qpath == "" {
		qpath = DefaultQuestions
	}
	questions, err := loadQuestions(qpath)
	if err != nil {
		return nil, err
	}
	rep := &Report{Scenario: sc.Name, Description: sc.Description, Speed: speed,
		Duration: sc.Load.Duration, Warmup: sc.Load.Warmup}
	var windows []Window // none over HTTP: the faults are not injected
	settings := o.Settings
	if o.Target != "" {
		u, _ := url.Parse(o.Target) // Check parsed it
		u.User = nil                // may hold a password
		rep.Target = u.String()
		settings = []string{SettingTarget}
	} else {
		windows = sc.FailingWindows()
		if len(settings) == 0 {
			settings = defaultSettings(sc)
		}
	}
	rep.Faults = windows
	for i, s := range settings {
		var tr *trace
		var err error
		pg := newProgress(o, s, i, len(settings), speed)
		if s == SettingTarget {
			tr, err = runTarget(ctx, o, questions, speed, pg)
		} else {
			tr, err = runSetting(ctx, sc, s, questions, speed, windows, pg)
		}
		if err != nil {
			return nil, err
		}
		rep.Settings = append(rep.Settings, summarize(tr, windows))
	}
	return rep, nil
}

// clockScale maps real times of one setting's run to scenario time.
type clockScale struct {
	zero  time.Time // the end of the warm-up
	speed float64
}

func (c clockScale) at(t time.Time) time.Duration { return c.dur(t.Sub(c.zero)) }
func (c clockScale) dur(d time.Duration) time.Duration {
	return time.Duration(float64(d) * c.speed)
}

// samples returns the results of a drive in scenario time.
func (c clockScale) samples(results []result) []sample {
	out := make([]sample, 0, len(results))
	for _, r := range results {
		out = append(out, sample{at: c.at(r.due), latency: c.dur(r.latency), lag: c.dur(r.lag),
			source: r.source, cause: r.cause})
	}
	return out
}

// scaledLoad returns l played at speed: its durations divided by speed,
// its rate multiplied by it.
func scaledLoad(l Load, speed float64) Load {
	l.Duration, l.Warmup = scaleDur(l.Duration, speed), scaleDur(l.Warmup, speed)
	if l.Rate > 0 {
		l.Rate *= speed
	}
	return l
}

// queryFor returns question i of sc's load: the questions in turn, each
// round under the next of the scenario's tenants, each question in a
// session of its own.
func queryFor(sc *Scenario, questions []string, i int) tiers.Query {
	tenant := "drill"
	if n := len(sc.Tenants); n > 0 {
		tenant = sc.Tenants[(i/len(questions))%n]
	}
	return tiers.Query{Tenant: tenant, Session: "drill-" + strconv.Itoa(i), Question: questions[i%len(questions)]}
}

// rig is one setting's pipeline and upstream, ready to run.
type rig struct {
	cfg       config.Config // as built: transformed, scaled, pointing at up
	keys      []string      // config.models keys, sorted
	up        *upstream
	p         *pipeline.Pipeline
	obs       *observer
	transport *http.Transport
}

// newRig builds the pipeline of sc under setting, scaled by speed, against
// a fresh upstream. Close it when done.
func newRig(sc *Scenario, setting string, speed float64) (*rig, error) {
	cfg, err := configFor(sc.Config, setting)
	if err != nil {
		return nil, err
	}
	scaleConfig(&cfg, speed)
	r := &rig{cfg: cfg, keys: slices.Sorted(maps.Keys(cfg.Models)), obs: &observer{fallback: fallbackTier(cfg)}}
	if r.up, err = newUpstream(r.keys, nil); err != nil {
		return nil, fmt.Errorf("drill: upstream: %w", err)
	}
	for _, k := range r.keys {
		m := cfg.Models[k]
		// The upstream keeps faults and counters by the requested model
		// name: ask for the config.models key, which is unique, so that
		// entries sharing a provider model name stay apart.
		m.BaseURL, m.APIKeyEnv, m.Model = r.up.baseURL(k), "", k
		cfg.Models[k] = m
	}
	r.transport = &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}
	r.p, err = config.Build(cfg, config.Env{Getenv: func(string) string { return "" }, Observer: r.obs,
		HTTPClient: &http.Client{Transport: r.transport}})
	if err != nil {
		r.up.close()
		return nil, fmt.Errorf("drill: %s: %w", setting, err)
	}
	return r, nil
}

// close stops the pipeline (waiting for its questions), then the upstream.
func (r *rig) close() {
	r.p.Close()
	r.up.close()
	r.transport.CloseIdleConnections()
}

// runSetting plays sc, whose failing windows are windows, under one
// protection setting against a fresh upstream and pipeline, telling pg.
func runSetting(ctx context.Context, sc *Scenario, setting string, questions []string, speed float64, windows []Window,
	pg *progress) (*trace, error) {
	r, err := newRig(sc, setting, speed)
	if err != nil {
		return nil, err
	}
	defer r.close()
	tr := &trace{setting: setting}
	for _, w := range windows {
		tr.maxPerOpen = max(tr.maxPerOpen, breakerLimit(sc.Config, w.Model))
	}
	if (setting == SettingNone || setting == SettingBreaker) && hasMode(sc, llmtest.ModeRateLimit) {
		tr.note = "Retry-After is honoured in every setting: the pipeline always cools a model down after a 429."
	}
	load := scaledLoad(sc.Load, speed)
	start := time.Now()
	cs := clockScale{zero: start.Add(load.Warmup), speed: speed}
	r.obs.start(cs)
	r.up.play(cs, sc.Faults, speed)
	limit := 2*r.cfg.Server.RequestTimeout + time.Second
	smp := startSampler(samplePeriod)
	pg.begin(start, r.p.Breakers().Snapshots)
	results := drive(ctx, load, start, limit, pg.counting(pipelineAsker(r.p, sc, questions)))
	pg.end()
	tr.peakG, tr.peakHeap = smp.finish()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tr.segments = r.up.segments()
	tr.samples = cs.samples(results)
	tr.arrivals = r.up.takeArrivals()
	tr.transitions, tr.fallback = r.obs.results(windows)
	tr.calls, tr.hedges = r.obs.modelCalls()
	tr.firstWave, tr.hedgeAfter = firstWave(tr, sc.Config, windows), hedgeOf(sc.Config)
	return tr, nil
}

// pipelineAsker asks question i of the scenario through p.
func pipelineAsker(p *pipeline.Pipeline, sc *Scenario, questions []string) asker {
	return func(ctx context.Context, i int) outcome {
		q := queryFor(sc, questions, i)
		var res *pipeline.Result
		var err error
		if sc.Stream {
			res, err = p.Stream(ctx, q, func(pipeline.StreamEvent) error { return nil })
		} else {
			res, err = p.Ask(ctx, q)
		}
		if err != nil || res == nil {
			return outcome{source: sourceError}
		}
		return outcome{source: string(res.Source)}
	}
}

// observer collects the pipeline events a report needs. It is safe for
// concurrent use.
type observer struct {
	fallback string // the fallback tier's name

	mu          sync.Mutex // guards the fields below
	cs          clockScale
	started     bool
	transitions []Transition
	fbCalls     []fbCall
	calls       []modelCall     // in scenario time
	hedges      []time.Duration // in scenario time
}

type fbCall struct {
	end   time.Time
	dur   time.Duration
	model string
}

func (o *observer) start(cs clockScale) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cs, o.started = cs, true
}

// Observe implements pipeline.Observer.
func (o *observer) Observe(e pipeline.Event) {
	switch e.Kind {
	case pipeline.EventBreaker:
		o.mu.Lock()
		if o.started {
			o.transitions = append(o.transitions, Transition{At: o.cs.at(e.Time), Key: e.Breaker,
				From: e.From.String(), To: e.To.String()})
		}
		o.mu.Unlock()
	case pipeline.EventHedge:
		o.hedged(e)
	case pipeline.EventAttempt:
		a := e.Attempt
		o.called(e)
		if a.Tier != o.fallback || o.fallback == "" || a.Outcome != pipeline.OutcomeSuccess {
			return
		}
		o.mu.Lock()
		o.fbCalls = append(o.fbCalls, fbCall{end: e.Time, dur: a.Duration, model: a.Model})
		o.mu.Unlock()
	}
}

// results returns the transitions and the durations of the fallback's
// successful calls while its model was healthy (outside windows), in
// scenario time.
func (o *observer) results(windows []Window) ([]Transition, []time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var fb []time.Duration
	for _, c := range o.fbCalls {
		start := o.cs.at(c.end.Add(-c.dur))
		if start < 0 || inModelWindows(start, c.model, windows) {
			continue
		}
		fb = append(fb, o.cs.dur(c.dur))
	}
	return slices.Clone(o.transitions), fb
}

// inModelWindows reports whether model was failing at t.
func inModelWindows(t time.Duration, model string, ws []Window) bool {
	for _, w := range ws {
		if w.Model == model && t >= w.Start && t < w.End {
			return true
		}
	}
	return false
}

// hasMode reports whether a step of sc's timelines has mode m.
func hasMode(sc *Scenario, m llmtest.Mode) bool {
	for _, steps := range sc.Faults {
		for _, s := range steps {
			if s.Mode == m {
				return true
			}
		}
	}
	return false
}
