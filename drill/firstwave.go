package drill

import (
	"fmt"
	"slices"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/pipeline"
)

// Goal thresholds of the first-wave drill (a scenario whose configuration
// hedges a tier).
const (
	firstWaveSpan     = 10 * time.Second // the questions asked this soon after the outage starts
	goalFirstWaveP99  = 1.2              // p99 <= hedge_after + this x the fallback's healthy p99
	goalHedgeOverhead = 0.05             // extra calls from hedging while healthy, of the questions
)

// FirstWave holds the figures of the first wave of an outage: the
// questions asked in its first seconds, the calls sent to the hung model
// before its breaker opened, and what hedging cost while nothing failed.
// It is reported for a scenario whose configuration hedges a tier. It is
// a plain value.
type FirstWave struct {
	Model      string        `json:"model"`       // the first model to fail
	HedgeAfter time.Duration `json:"hedge_after"` // the scenario's (0 in a setting that does not hedge)
	// Latency is over the questions asked in the first 10 s of the outage.
	Latency Latency `json:"latency"`
	// InFlight is how many calls of the model were in flight when it
	// started failing; CallsToTrip how many it received from then until
	// its breaker (model or tier) first opened, at TripAt (0: never).
	InFlight     int           `json:"in_flight"`
	CallsToTrip  int           `json:"calls_to_trip"`
	TripAt       time.Duration `json:"trip_at"`
	MinimumCalls int           `json:"minimum_calls"`
	// HealthyQuestions were asked while no model failed; HealthyHedges
	// are the hedges (each one extra model call) among them.
	HealthyQuestions int `json:"healthy_questions"`
	HealthyHedges    int `json:"healthy_hedges"`
}

// modelCall is one call to a model, in scenario time, as the pipeline saw
// it.
type modelCall struct {
	model      string
	start, end time.Duration
	prompt     int // prompt tokens: the provider's, else estimated
}

// hedgeOf returns the first hedge_after of c's tiers, 0 if none hedges.
func hedgeOf(c config.Config) time.Duration {
	for _, t := range c.Tiers {
		if t.Kind == config.KindLLM && t.LLM.HedgeAfter > 0 {
			return t.LLM.HedgeAfter
		}
	}
	return 0
}

// firstWave returns the first-wave figures of tr under the scenario
// configuration cfg whose failing windows are windows, nil when cfg hedges
// no tier or nothing fails.
func firstWave(tr *trace, cfg config.Config, windows []Window) *FirstWave {
	hedge := hedgeOf(cfg)
	if hedge <= 0 || len(windows) == 0 || tr.overHTTP {
		return nil
	}
	w := windows[0]
	for _, o := range windows[1:] {
		if o.Start < w.Start {
			w = o
		}
	}
	fw := &FirstWave{Model: w.Model, MinimumCalls: minimumCalls(cfg, w.Model)}
	if tr.setting == SettingHedged {
		fw.HedgeAfter = hedge
	}
	var first []time.Duration
	for _, s := range tr.samples {
		switch {
		case s.at >= w.Start && s.at < w.Start+firstWaveSpan:
			first = append(first, s.latency)
		case s.at >= 0 && !inWindows(s.at, windows):
			fw.HealthyQuestions++
		}
	}
	fw.Latency = percentiles(first)
	for _, c := range tr.calls {
		if c.model == w.Model && c.start < w.Start && c.end > w.Start {
			fw.InFlight++
		}
	}
	keys := breakerKeys(cfg, w.Model)
	trip := w.End
	for _, t := range tr.transitions {
		if t.To == breaker.StateOpen.String() && t.At >= w.Start && t.At < trip && slices.Contains(keys, t.Key) {
			trip, fw.TripAt = t.At, t.At
		}
	}
	for _, a := range tr.arrivals {
		if a.model == w.Model && a.failing && a.at >= w.Start && a.at < trip {
			fw.CallsToTrip++
		}
	}
	for _, at := range tr.hedges {
		if at >= 0 && !inWindows(at, windows) {
			fw.HealthyHedges++
		}
	}
	return fw
}

// breakerKeys returns the breakers that take model out of the chain when
// they open: its own and those of the llm tiers naming it.
func breakerKeys(c config.Config, model string) []string {
	keys := []string{"model/" + model}
	for _, t := range c.Tiers {
		if t.Kind == config.KindLLM && slices.Contains(t.LLM.Models, model) {
			keys = append(keys, "tier/"+t.Name)
		}
	}
	return keys
}

// minimumCalls returns minimum_calls, as the breaker runs it, of the first
// llm tier naming model.
func minimumCalls(c config.Config, model string) int {
	for _, t := range c.Tiers {
		if t.Kind != config.KindLLM || !slices.Contains(t.LLM.Models, model) {
			continue
		}
		var bc breaker.Config
		if b := t.Breaker; b != nil {
			bc.MinimumCalls, bc.Window, bc.WindowDuration = b.MinimumCalls, b.Window, b.WindowDuration
		}
		return bc.WithDefaults().MinimumCalls
	}
	return 0
}

// firstWaveGoals checks the goals of the first-wave drill on r, whose
// fallback's healthy p99 is r.FallbackP99; hedge is the scenario's
// hedge_after, the yardstick of every setting.
func firstWaveGoals(r *SettingReport, hedge time.Duration) []Goal {
	fw := r.FirstWave
	lat := Goal{Name: "p99 of the questions asked in the first 10 s of the outage",
		Want: fmt.Sprintf("<= hedge_after + %.1fx fallback's healthy p99", goalFirstWaveP99)}
	if r.FallbackP99 > 0 && fw.Latency.N > 0 {
		bar := hedge + time.Duration(goalFirstWaveP99*float64(r.FallbackP99))
		lat.Got = fmt.Sprintf("%s (bar %s = %s + %.1f x %s)", ms(fw.Latency.P99), ms(bar), ms(hedge), goalFirstWaveP99, ms(r.FallbackP99))
		lat.Met = fw.Latency.P99 <= bar
	} else {
		lat = lat.unmeasured("n/a (no fallback answer while healthy, or no question in the first wave)")
	}
	limit := fw.InFlight + fw.MinimumCalls
	trip := Goal{Name: "calls to the failing model from the outage's start to the trip",
		Want: fmt.Sprintf("<= %d (%d in flight + minimum_calls %d)", limit, fw.InFlight, fw.MinimumCalls),
		Got:  fmt.Sprint(fw.CallsToTrip), Met: fw.TripAt > 0 && fw.CallsToTrip <= limit}
	if fw.TripAt == 0 {
		trip.Got += " (never tripped)"
	}
	over := Goal{Name: "extra calls from hedging while healthy", Want: "<= " + percent(goalHedgeOverhead) + " of the questions"}
	if fw.HealthyQuestions > 0 {
		share := float64(fw.HealthyHedges) / float64(fw.HealthyQuestions)
		over.Got = fmt.Sprintf("%s (%d of %d)", percent(share), fw.HealthyHedges, fw.HealthyQuestions)
		over.Met = share <= goalHedgeOverhead
	} else {
		over = over.unmeasured("n/a (no question while healthy)")
	}
	return []Goal{lat, trip, over}
}

// called records e's model call, if it made one.
func (o *observer) called(e pipeline.Event) {
	a := e.Attempt
	if a.Model == "" || a.Skipped() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started {
		o.calls = append(o.calls, modelCall{model: a.Model, start: o.cs.at(e.Time.Add(-a.Duration)), end: o.cs.at(e.Time),
			prompt: a.Usage.PromptTokens})
	}
}

// hedged records when the call hedged in e started.
func (o *observer) hedged(e pipeline.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started {
		o.hedges = append(o.hedges, o.cs.at(e.Time.Add(-e.Attempt.Duration)))
	}
}

// modelCalls returns the model calls and the hedges' starts recorded.
func (o *observer) modelCalls() ([]modelCall, []time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.calls), slices.Clone(o.hedges)
}

// firstWaveRows writes the first-wave figures as rows of the report's
// table, a cell per setting.
func firstWaveRows(row func(name string, cell func(s *SettingReport) string)) {
	fw := func(cell func(f *FirstWave) string) func(s *SettingReport) string {
		return func(s *SettingReport) string {
			if s.FirstWave == nil {
				return "n/a"
			}
			return cell(s.FirstWave)
		}
	}
	row("hedge_after", fw(func(f *FirstWave) string { return orNA(f.HedgeAfter > 0, f.HedgeAfter) }))
	row("first 10 s of the outage: p50 / p99 / max", fw(func(f *FirstWave) string {
		return ms(f.Latency.P50) + " / " + ms(f.Latency.P99) + " / " + ms(f.Latency.Max)
	}))
	row("calls in flight when the outage began", fw(func(f *FirstWave) string { return fmt.Sprint(f.InFlight) }))
	row("calls to the failing model until the trip", fw(func(f *FirstWave) string {
		if f.TripAt == 0 {
			return fmt.Sprintf("%d (never tripped)", f.CallsToTrip)
		}
		return fmt.Sprintf("%d (tripped at %s)", f.CallsToTrip, dur(f.TripAt))
	}))
	row("hedges while healthy", fw(func(f *FirstWave) string {
		return fmt.Sprintf("%d of %d questions", f.HealthyHedges, f.HealthyQuestions)
	}))
}
