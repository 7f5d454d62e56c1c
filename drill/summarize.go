package drill

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// Goal thresholds of the primary-outage drill.
const (
	goalAvailability = 0.999
	goalWaste        = 0.01
	goalLatency      = 1.5
)

// sourceError is the source recorded for a question that got no answer.
const sourceError = "error"

// lagTolerance is how late, in scenario time, the load driver may ask a
// question before the report warns that it fell behind.
const lagTolerance = 50 * time.Millisecond

// naHTTP stands for a figure a drill over HTTP cannot see.
const naHTTP = "n/a (not measured over HTTP)"

// sample is one question as the load driver saw it.
type sample struct {
	at      time.Duration // when it was due, since the end of the warm-up
	latency time.Duration // from when it was due until it ended
	lag     time.Duration // how late the driver asked it
	source  string        // "" or sourceError when not answered
	cause   string        // why not answered, when known (e.g. "HTTP 401")
}

// arrival is one chat call received by the upstream.
type arrival struct {
	at      time.Duration
	model   string // the config.models key
	failing bool   // whether the fault it met counts as failing
}

// segment is one model's upstream counters over a part of the timeline.
type segment struct {
	model   string
	failing bool
	stats   llmtest.Stats // what the model served during the segment
}

// trace is everything recorded while one setting ran.
type trace struct {
	setting     string
	overHTTP    bool // driven over HTTP: only the samples were measured
	samples     []sample
	transitions []Transition
	arrivals    []arrival
	segments    []segment
	fallback    []time.Duration // successful fallback calls while it was healthy
	peakG       int
	peakHeap    uint64
	maxPerOpen  int // failure_threshold + half_open_max_calls of the failing models
	note        string
	calls       []modelCall     // the pipeline's model calls
	hedges      []time.Duration // when each hedged call started
	firstWave   *FirstWave      // set for a scenario that hedges a tier
	hedgeAfter  time.Duration   // the scenario's hedge_after
}

// summarize turns a trace into a SettingReport; windows are the failing
// windows of the scenario.
func summarize(tr *trace, windows []Window) *SettingReport {
	r := &SettingReport{
		Setting:         tr.setting,
		OverHTTP:        tr.overHTTP,
		BySource:        map[string]int{},
		Transitions:     tr.transitions,
		MaxCallsPerOpen: tr.maxPerOpen,
		PeakGoroutines:  tr.peakG,
		PeakHeap:        tr.peakHeap,
		Note:            tr.note,
	}
	var all, inFault []time.Duration
	var avail, answered int
	for _, s := range tr.samples {
		if s.at < 0 {
			continue
		}
		src := s.source
		if src == "" {
			src = sourceError
		}
		r.Questions++
		r.BySource[src]++
		if src == sourceError && s.cause != "" {
			if r.Errors == nil {
				r.Errors = map[string]int{}
			}
			r.Errors[s.cause]++
		}
		if s.lag > lagTolerance {
			r.LateQuestions++
		}
		r.MaxLag = max(r.MaxLag, s.lag)
		switch tiers.Source(src) {
		case tiers.SourcePrimary, tiers.SourceFallback, tiers.SourceCache, tiers.SourceStaleCache:
			avail++
			answered++
		case tiers.SourceRetrieval, tiers.SourceStatic:
			answered++
		}
		all = append(all, s.latency)
		if inWindows(s.at, windows) {
			inFault = append(inFault, s.latency)
		}
		r.Samples = append(r.Samples, Point{At: s.at, Latency: s.latency, Source: src})
	}
	if r.Questions > 0 {
		r.Availability = float64(avail) / float64(r.Questions)
		r.Answered = float64(answered) / float64(r.Questions)
	}
	r.Latency = percentiles(all)
	r.FaultLatency = percentiles(inFault)
	r.FallbackP99 = percentiles(slices.Clone(tr.fallback)).P99
	r.FailingCalls, r.FailingTokens, r.Tokens = tokens(tr.segments, tr.calls, windows)
	if r.Tokens > 0 {
		r.Waste = float64(r.FailingTokens) / float64(r.Tokens)
	}
	worst := 0
	r.OpenPeriods, worst = openPeriods(tr, windows)
	r.Goals = goals(r, worst, len(windows) > 0)
	if r.FirstWave = tr.firstWave; r.FirstWave != nil {
		// A hang trips by slow calls, not by consecutive failures: the
		// first wave's own goal on the calls until the trip stands for
		// the per-period bar of failure_threshold + half_open_max_calls.
		for i, g := range r.Goals {
			if g.Name == goalPerOpenName {
				r.Goals[i] = g.unmeasured(g.Got + " (n/a: a hang trips by slow calls; see the calls until the trip)")
			}
		}
		r.Goals = append(r.Goals, firstWaveGoals(r, tr.hedgeAfter)...)
	}
	r.Warnings = warnings(r)
	return r
}

// warnings returns what a reader of r must know before its figures: that
// no question was answered at all, or that the load driver fell behind.
func warnings(r *SettingReport) []string {
	var out []string
	if r.AllFailed() {
		w := fmt.Sprintf("every one of the %d questions failed", r.Questions)
		if len(r.Errors) > 0 {
			w += " (" + r.Causes() + ")"
		}
		out = append(out, w+".")
	}
	if r.LateQuestions > 0 {
		out = append(out, fmt.Sprintf("the load driver fell behind: %d of %d questions were asked more than %s late "+
			"(at most %s), and their latencies include the delay; run at a lower speed.",
			r.LateQuestions, r.Questions, ms(lagTolerance), ms(r.MaxLag)))
	}
	return out
}

// tokens returns the calls and tokens sent to failing models and all
// tokens. The upstream counts no prompt for a call that met a fault. With
// the pipeline's model calls seen (calls), a failing model's prompt tokens
// are at least those its calls' attempts report while it failed: the
// provider's usage, else the estimate of the prompt sent
// (tiers.EstimateTokens), as ragfuse_tokens_wasted_total counts them;
// without, at least its calls times the mean prompt of the healthy calls.
func tokens(segs []segment, calls []modelCall, windows []Window) (failCalls, failTokens, total int64) {
	var healthyPrompt, healthyCalls int64
	counted, callsOf := map[string]int64{}, map[string]int64{}
	for _, s := range segs {
		if !s.failing {
			healthyPrompt += s.stats.PromptTokens
			healthyCalls += s.stats.Calls - s.stats.Faulted
			total += s.stats.PromptTokens + s.stats.CompletionTokens
			continue
		}
		counted[s.model] += s.stats.PromptTokens
		callsOf[s.model] += s.stats.Calls
		failCalls += s.stats.Calls
		failTokens += s.stats.CompletionTokens
	}
	estimated := map[string]int64{}
	for _, c := range calls {
		if inModelWindows(c.start, c.model, windows) {
			estimated[c.model] += int64(c.prompt)
		}
	}
	var mean int64
	if healthyCalls > 0 {
		mean = healthyPrompt / healthyCalls
	}
	for m, prompt := range counted {
		if len(calls) > 0 {
			prompt = max(prompt, estimated[m])
		} else {
			prompt = max(prompt, callsOf[m]*mean)
		}
		failTokens += prompt
	}
	return failCalls, failTokens, total + failTokens
}

// openPeriods counts, per opening of a failing model's breaker, the calls
// the model received since the failure began or the previous opening. It
// also returns the worst count, including the calls after the last
// opening and, when the breaker never opened, all calls of the window.
func openPeriods(tr *trace, windows []Window) ([]OpenPeriod, int) {
	var out []OpenPeriod
	worst := 0
	for _, w := range windows {
		key := "model/" + w.Model
		count := func(from, to time.Duration) int {
			n := 0
			for _, a := range tr.arrivals {
				if a.model == w.Model && a.failing && a.at >= from && a.at < to {
					n++
				}
			}
			return n
		}
		cursor := w.Start
		for _, t := range tr.transitions {
			if t.Key != key || t.To != breaker.StateOpen.String() || t.At < w.Start || t.At >= w.End {
				continue
			}
			n := count(cursor, t.At)
			out = append(out, OpenPeriod{Key: key, At: t.At, Calls: n})
			worst = max(worst, n)
			cursor = t.At
		}
		worst = max(worst, count(cursor, w.End))
	}
	return out, worst
}

// goalPerOpenName names the goal on the calls a failing model gets per
// open period of its breaker.
const goalPerOpenName = "calls to a failing model per open period"

// goals checks the goals of the primary-outage drill on r. A goal that
// cannot be checked (over HTTP, or with no model failing) is Unmeasured,
// neither met nor missed.
func goals(r *SettingReport, worstPerOpen int, faults bool) []Goal {
	avail := Goal{Name: "availability (model or cache)", Want: ">= " + percent(goalAvailability),
		Got: percent(r.Availability), Met: r.Availability >= goalAvailability}
	if r.Questions == 0 {
		avail = avail.unmeasured("n/a (no question measured)")
	}
	perOpen := Goal{Name: goalPerOpenName, Want: "<= failure_threshold + half_open_max_calls",
		Got: fmt.Sprint(worstPerOpen), Met: r.MaxCallsPerOpen > 0 && worstPerOpen <= r.MaxCallsPerOpen}
	if r.MaxCallsPerOpen > 0 {
		perOpen.Want = fmt.Sprintf("<= %d", r.MaxCallsPerOpen)
	}
	waste := Goal{Name: "tokens sent to failing models", Want: "<= " + percent(goalWaste),
		Got: percent(r.Waste), Met: r.Waste <= goalWaste}
	lat := Goal{Name: "p99 while failing vs fallback's healthy p99", Want: fmt.Sprintf("<= %.1fx", goalLatency)}
	switch {
	case r.OverHTTP:
		perOpen, waste, lat = perOpen.unmeasured(naHTTP), waste.unmeasured(naHTTP), lat.unmeasured(naHTTP)
	case !faults:
		const none = "n/a (no model failing)"
		perOpen, waste, lat = perOpen.unmeasured(none), waste.unmeasured(none), lat.unmeasured(none)
	case r.FallbackP99 > 0 && r.FaultLatency.N > 0:
		ratio := float64(r.FaultLatency.P99) / float64(r.FallbackP99)
		lat.Got = fmt.Sprintf("%.2fx (%s / %s)", ratio, ms(r.FaultLatency.P99), ms(r.FallbackP99))
		lat.Met = ratio <= goalLatency
	default:
		lat = lat.unmeasured("n/a (no fallback answer while healthy, or no question while failing)")
	}
	return []Goal{avail, perOpen, waste, lat}
}

// unmeasured returns g marked as not checked, got saying why.
func (g Goal) unmeasured(got string) Goal {
	g.Got, g.Met, g.Unmeasured = got, false, true
	return g
}

// ms formats d in milliseconds, rounded sensibly for a table.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f ms", f)
	case f >= 10:
		return fmt.Sprintf("%.1f ms", f)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.2f", f), "0") + " ms"
}
