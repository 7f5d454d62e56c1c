// Package drill runs scripted outages against the ragfuse pipeline and
// reports, with numbers and a chart, what each protection buys.
//
// A Scenario (YAML, see ParseScenario) names a pipeline configuration, a
// fault timeline per model, a load (an open-loop rate or a closed-loop
// concurrency, a duration and a warm-up) and a question set. Run plays the
// scenario once per protection setting against a fresh in-process
// tiers/llmtest upstream:
//
//	none     tiers tried in order with only their per-call timeouts: no
//	         breakers, no budget reserve, no bulkheads, no rate limits, no
//	         cache tiers (what a naive integration does)
//	breaker  the configured breakers, nothing else
//	full     everything the configuration sets: breakers, budget, bulkheads,
//	         rate limits, the semantic and stale caches
//
// The settings run one after another, never side by side, so that they do
// not compete for the CPU and their latencies can be compared. With a
// Speed above 1 every duration (the timeline, the load's duration and
// warm-up, tier timeouts, breaker periods, bulkhead queue timeouts, fault
// delays) is divided by Speed and every rate multiplied by it: the same
// questions in the same pattern, compressed in time. Reports are written
// in scenario time (measured durations multiplied by Speed). Retry-After
// headers are whole seconds, so a 429 storm compresses only as far as
// that allows.
//
// With Options.Target set, Run drives a running server's POST /v1/ask over
// HTTP instead, as the single setting "target"; faults are then the
// running upstream's business.
//
// A Report holds, per setting: answers by source, availability, latency
// percentiles (overall and while a model was failing), calls and tokens
// sent to failing models, breaker transitions, calls to a failing model
// per open period, peak goroutines and heap, and the goals of the
// primary-outage drill. WriteJSON, WriteMarkdown and WritePNG render it.
package drill
