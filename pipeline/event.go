package pipeline

import (
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// Result is the outcome of one question through the pipeline.
type Result struct {
	tiers.Answer
	// Degraded is true when the answer did not come from the primary model
	// tier or the cache.
	Degraded bool
	// Attempts lists every tier and model candidate considered, in order,
	// including skipped ones.
	Attempts []Attempt
	Duration time.Duration
	// Shared is true when this result was produced by an identical
	// in-flight question of the same tenant (singleflight).
	Shared bool
}

// OutcomeSuccess is the Outcome of an Attempt that answered.
const OutcomeSuccess = "success"

// The Outcomes of an Attempt skipped without a call (see Attempt.Skipped).
const (
	outcomeBreakerOpen     = "breaker_open"     // its breaker is open
	outcomeBulkheadFull    = "bulkhead_full"    // no room in its bulkhead past the queue timeout
	outcomeCoolingDown     = "cooling_down"     // the model answered 429 recently
	outcomeQuota           = "over_quota"       // the tenant is over its model quota
	outcomeBudgetExhausted = "budget_exhausted" // no time left in the request's budget
)

// Attempt is one tier (and model candidate) considered for a question.
type Attempt struct {
	Tier  string `json:"tier"`
	Model string `json:"model,omitempty"`
	// Outcome is OutcomeSuccess, a failure kind (a tiers.Kind such as
	// "timeout" or "server_error") or why the tier or model was skipped
	// without a call: "breaker_open", "bulkhead_full", "cooling_down"
	// (after a 429), "over_quota" (the tenant is over its model quota) or
	// "budget_exhausted" (no time left in the request's budget), or
	// OutcomeHedged (cancelled: the other call of its hedge answered
	// first).
	Outcome  string        `json:"outcome"`
	Duration time.Duration `json:"-"`
	Error    string        `json:"error,omitempty"` // a short, secret-free description
	Usage    tiers.Usage   `json:"-"`               // tokens spent, also on failures (wasted)
}

// Skipped reports whether the tier or model was skipped without a call.
func (a Attempt) Skipped() bool {
	switch a.Outcome {
	case outcomeBreakerOpen, outcomeBulkheadFull, outcomeCoolingDown, outcomeQuota, outcomeBudgetExhausted:
		return true
	}
	return false
}

// EventKind says what an Event reports.
type EventKind uint8

// The event kinds.
const (
	EventAttempt          EventKind = iota + 1 // a tier or candidate attempt finished (Attempt)
	EventAnswered                              // a question was answered (Result)
	EventBreaker                               // a breaker changed state (Breaker, From, To)
	EventRateLimited                           // a question was over a rate limit (Reason: "global" or "tenant")
	EventBulkheadRejected                      // a bulkhead turned a call away (Tier)
	EventCache                                 // a cache lookup (Tier, Reason: "hit", "miss", "stale")
	EventHedge                                 // a hedged stage's call was hedged, the hedge not skipped by a guard (Tier: the hedged stage, Reason: "true" if the hedge won, else "false"; Attempt.Duration: from the hedged call's start to the end)
	EventProbe                                 // a prober probed a model (Breaker; Attempt, of tier "probe"; From half_open, To the state after)
)

// Event is one thing that happened in the pipeline, for metrics and logs.
type Event struct {
	Kind    EventKind
	Time    time.Time
	Tenant  string
	Tier    string
	Attempt Attempt // EventAttempt
	Result  *Result // EventAnswered; must not be modified
	Breaker string  // EventBreaker: the breaker's name, e.g. "model/qwen3-max"
	From    breaker.State
	To      breaker.State
	Trip    breaker.TripReason // EventBreaker to StateOpen: what tripped it
	Reason  string
}

// Observer receives the pipeline's events. Observe is called synchronously
// on the question's goroutine, never with a lock held; it must be quick and
// safe for concurrent use.
type Observer interface {
	Observe(e Event)
}
