// Package drill runs scripted outages against the ragfuse pipeline and
// reports, with numbers and a chart, what each protection buys.
//
// A Scenario (YAML, see ParseScenario) names a configuration (package
// config, checked as config.Parse checks it), a fault timeline per model, a load (an open-loop rate or a closed-loop
// concurrency, a duration and a warm-up) and a question set. Paths written
// in a scenario are relative to its file; a config_file is read as
// ragfuse serve --config reads it, its knowledge_base.path relative to the
// working directory. Run builds the pipeline with config.Build and plays
// the scenario once per protection setting against a fresh in-process
// upstream:
//
//	none     tiers tried in order with only their per-call timeouts: no
//	         breakers, no budget reserve, no bulkheads, no rate limits, no
//	         cache tiers, no hedging (what a naive integration does)
//	breaker  the configured breakers, nothing else
//	full     everything the configuration sets but hedging: breakers, budget,
//	         bulkheads, rate limits, the semantic and stale caches
//	hedged   full with the configured hedge_after; played after the others
//	         by default when the configuration hedges a tier
//
// The upstream serves each phase of a model's fault timeline with a
// tiers/llmtest server of its own, chosen when a call arrives: the fault a
// call meets and the counters it is counted in are one decision, so calls
// and tokens sent to failing models are exact even at a switch.
//
// The settings run one after another, never side by side, so that they do
// not compete for the CPU and their latencies can be compared. Questions
// are timed from when the load says they are due: a driver that falls
// behind moves no warm-up question into the measured window, its lag
// counts in the latencies, and the report warns.
//
// With a Speed above 1 every duration (the timeline, the load's duration
// and warm-up, tier timeouts, breaker periods, bulkhead queue timeouts,
// fault delays) is divided by Speed and every rate multiplied by it: the
// same questions in the same pattern, compressed in time. Reports are written
// in scenario time (measured durations multiplied by Speed). Retry-After
// headers are whole seconds, so a 429 storm compresses only as far as
// that allows.
//
// With Options.Target set, Run drives a running server's POST /v1/ask over
// HTTP instead, as the single setting "target", with Options.APIKey as a
// bearer token if set (the key then decides the tenant). The scenario's
// faults are not injected and nothing behind the server is seen: the
// report has no failing window, and the figures and goals about failing
// models, tokens and breakers are marked not measured. Answers other than
// 200 are counted by HTTP status.
//
// A Report holds, per setting: answers by source, availability, latency
// percentiles (overall and while a model was failing), calls and tokens
// sent to failing models, breaker transitions, calls to a failing model
// per open period, peak goroutines and heap, the goals of the
// primary-outage drill (met, missed, or not measured), and warnings: every
// question failed, or the load driver fell behind. WriteJSON,
// WriteMarkdown and WritePNG render it; the chart puts, per setting, a
// lane per failing model and per breaker below the latency plot, on the
// same time axis, and the legend beside them, never over the data.
//
// A scenario whose configuration hedges a tier also gets the first-wave
// figures (FirstWave) of its first failing model and their goals: the p99
// of the questions asked in the first 10 s of the outage against
// hedge_after + 1.2 x the fallback's healthy p99; the calls the model
// received from the outage's start to the first opening of its breaker
// (model or tier) against the calls in flight at the start plus
// minimum_calls; and the hedges of questions asked while nothing failed
// against 5% of those questions.
//
// With Options.Progress set, Run writes a line every
// Options.ProgressEvery while a setting plays, and one when it ends: the
// setting, the scenario time elapsed of its total, the questions answered
// by source, and the breakers that are not closed.
package drill
