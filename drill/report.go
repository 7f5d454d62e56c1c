package drill

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Report is the outcome of a drill: one SettingReport per protection
// setting, in the order they ran. Times are scenario time (measured times
// multiplied by Speed). A Report is a plain value.
type Report struct {
	Scenario    string        `json:"scenario"`
	Description string        `json:"description,omitempty"`
	Speed       float64       `json:"speed"`
	Duration    time.Duration `json:"duration"`
	Warmup      time.Duration `json:"warmup"`
	// Target is the server driven over HTTP (its URL without user
	// information), "" for a drill in process.
	Target string `json:"target,omitempty"`
	// Faults are when each model was failing; empty over HTTP, where the
	// scenario's faults are not injected.
	Faults   []Window         `json:"faults"`
	Settings []*SettingReport `json:"settings"`
}

// Latency holds latency percentiles and the count they were taken over.
// It is a plain value.
type Latency struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50"`
	P95 time.Duration `json:"p95"`
	P99 time.Duration `json:"p99"`
	Max time.Duration `json:"max"`
}

// Transition is a breaker's change of state. It is a plain value.
type Transition struct {
	At   time.Duration `json:"at"`
	Key  string        `json:"key"` // e.g. "model/qwen3-max"
	From string        `json:"from"`
	To   string        `json:"to"`
}

// OpenPeriod counts the calls a failing model received before one opening
// of its breaker: from the start of the failure (or the previous opening)
// to this opening. The first period holds the calls that tripped the
// breaker, each later one the half-open probes that re-opened it. It is a
// plain value.
type OpenPeriod struct {
	Key   string        `json:"key"`
	At    time.Duration `json:"at"` // when the breaker opened
	Calls int           `json:"calls"`
}

// Goal is one goal of the primary-outage drill, checked on one setting.
// An Unmeasured goal could not be checked (Got says why): it is neither
// met nor missed. It is a plain value.
type Goal struct {
	Name       string `json:"name"`
	Want       string `json:"want"`
	Got        string `json:"got"`
	Met        bool   `json:"met"`
	Unmeasured bool   `json:"unmeasured,omitempty"`
}

// SettingReport is what one protection setting did under the scenario.
// It is a plain value.
type SettingReport struct {
	Setting string `json:"setting"`
	// OverHTTP marks the setting that drove a server over HTTP: only what
	// the questions' answers tell was measured. The upstream's figures
	// (FaultLatency, FallbackP99, FailingCalls, FailingTokens, Tokens,
	// Waste, Transitions, OpenPeriods) are then zero and not measured, and
	// PeakGoroutines and PeakHeap are the drill's own.
	OverHTTP  bool           `json:"over_http,omitempty"`
	Questions int            `json:"questions"` // asked after the warm-up
	BySource  map[string]int `json:"by_source"` // answers by source; "error" for none
	// Errors counts the questions not answered by cause where the cause
	// is known: over HTTP, "HTTP <status>" for an answer other than 200,
	// "connection error", "no answer in time", "unreadable answer" or
	// "request not sent".
	Errors map[string]int `json:"errors,omitempty"`
	// Availability is the share of questions answered by a model or a
	// cache; Answered the share answered at all (retrieval and static
	// included).
	Availability float64 `json:"availability"`
	Answered     float64 `json:"answered"`
	Latency      Latency `json:"latency"`       // every measured question
	FaultLatency Latency `json:"fault_latency"` // questions sent while a model was failing
	// FallbackP99 is the 99th percentile of the fallback tier's successful
	// calls while it was healthy: the yardstick of FaultLatency.
	FallbackP99 time.Duration `json:"fallback_p99"`
	// FailingCalls and FailingTokens count the calls and tokens sent to
	// models while they were failing; Tokens counts all tokens. The prompt
	// of a call that met a fault (which the upstream cannot count) is the
	// pipeline's estimate of the prompt it sent (tiers.EstimateTokens), as
	// ragfuse_tokens_wasted_total counts it.
	FailingCalls  int64        `json:"failing_calls"`
	FailingTokens int64        `json:"failing_tokens"`
	Tokens        int64        `json:"tokens"`
	Waste         float64      `json:"waste"` // FailingTokens / Tokens
	Transitions   []Transition `json:"transitions"`
	OpenPeriods   []OpenPeriod `json:"open_periods"`
	// MaxCallsPerOpen is failure_threshold + half_open_max_calls of the
	// failing models' breakers: the most calls an open period should see.
	MaxCallsPerOpen int    `json:"max_calls_per_open"`
	PeakGoroutines  int    `json:"peak_goroutines"`
	PeakHeap        uint64 `json:"peak_heap_bytes"`
	// LateQuestions counts the questions the load driver asked more than
	// 50 ms (scenario time) after they were due; MaxLag is the latest.
	// Latencies are taken from when a question was due, so they include
	// the driver's lag.
	LateQuestions int           `json:"late_questions"`
	MaxLag        time.Duration `json:"max_lag"`
	Goals         []Goal        `json:"goals"`
	// FirstWave is set for a scenario whose configuration hedges a tier.
	FirstWave *FirstWave `json:"first_wave,omitempty"`
	Samples   []Point    `json:"samples"` // every measured question, for the chart
	Note      string     `json:"note,omitempty"`
	// Warnings say what a reader must know before trusting the figures:
	// that every question failed, or that the load driver fell behind.
	Warnings []string `json:"warnings,omitempty"`
}

// AllFailed reports whether questions were measured and none was
// answered.
func (s *SettingReport) AllFailed() bool {
	return s.Questions > 0 && s.BySource[sourceError] == s.Questions
}

// Causes lists s.Errors as "HTTP 401: 80, connection error: 2", the most
// frequent cause first; "" when there is none.
func (s *SettingReport) Causes() string {
	keys := slices.SortedFunc(maps.Keys(s.Errors), func(a, b string) int {
		return cmp.Or(cmp.Compare(s.Errors[b], s.Errors[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, s.Errors[k])
	}
	return strings.Join(parts, ", ")
}

// MarshalJSON writes p compactly, as [at, latency, source] with the
// durations in nanoseconds.
func (p Point) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{int64(p.At), int64(p.Latency), p.Source})
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (p *Point) UnmarshalJSON(b []byte) error {
	var v struct {
		at, latency int64
		source      string
	}
	if err := json.Unmarshal(b, &[]any{&v.at, &v.latency, &v.source}); err != nil {
		return err
	}
	*p = Point{At: time.Duration(v.at), Latency: time.Duration(v.latency), Source: v.source}
	return nil
}

// Point is one measured question: when it was sent, how long it took, and
// the source of its answer ("error" when none). It is a plain value.
type Point struct {
	At      time.Duration `json:"at"`
	Latency time.Duration `json:"latency"`
	Source  string        `json:"source"`
}

// percentiles returns the latency percentiles of ds (sorted in place).
func percentiles(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration {
		i := int(p*float64(len(ds)) + 0.5)
		return ds[min(max(i-1, 0), len(ds)-1)]
	}
	return Latency{N: len(ds), P50: q(0.50), P95: q(0.95), P99: q(0.99), Max: ds[len(ds)-1]}
}

// inWindows reports whether t falls in one of ws.
func inWindows(t time.Duration, ws []Window) bool {
	for _, w := range ws {
		if t >= w.Start && t < w.End {
			return true
		}
	}
	return false
}
