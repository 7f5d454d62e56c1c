// Package breaker is a circuit breaker: it stops calling a dependency that
// keeps failing, and lets a few probes through later to see whether it has
// recovered.
//
// # States
//
// A Breaker starts CLOSED and lets every call through. It trips to OPEN when
//
//   - Config.FailureThreshold consecutive calls fail, or
//   - the sliding window holds at least Config.MinimumCalls outcomes and
//     failures/calls >= Config.FailureRate, or slow/calls >=
//     Config.SlowCallRate.
//
// The window is count-based (the last Config.Window outcomes) or, when
// Config.WindowDuration is set, time-based: Config.WindowBuckets buckets that
// expire one at a time as the clock moves. If the clock steps back by
// WindowDuration or more, the time window starts again, empty, from the new
// time; after a smaller step back, outcomes go into the newest bucket. A
// slow call is a Success that took at least Config.SlowCallDuration. A slow
// call is still a success: it resets the consecutive-failure count and is
// judged only by the slow-call rate.
//
// A call is slow as soon as it has been in flight for SlowCallDuration,
// not only when it returns: a CLOSED breaker that tracks slow calls counts
// its permits in flight by the slice of time they started in (an eighth of
// SlowCallDuration, at least 1ms), and counts those of a slice as slow
// calls of the window once all of them have run that long (so at most one
// slice late), then judges the rates. A call past the threshold is slow by
// definition: its real outcome replaces the slow mark, a success (or an
// Ignored outcome, such as a caller that gave up waiting) as a slow
// success whatever its elapsed time, a failure once, as a failure; an
// outcome of an earlier generation counts nowhere. So when a dependency hangs, the
// slow-call rule trips the breaker about SlowCallDuration after
// MinimumCalls calls started, before any returns; the next Allow, State or
// Snapshot sees it. Snapshot.SlowInFlight counts such calls; Calls and
// SlowCalls include them.
// Ignored outcomes (a cancelled caller, a request at fault) count nowhere,
// but for a call that ran for SlowCallDuration (below).
// The rates are judged after every recorded outcome.
//
// OPEN rejects every call with ErrOpen for Config.OpenDuration. After that
// the breaker is HALF_OPEN: it admits at most Config.HalfOpenMaxCalls probes
// at once (others get ErrTooManyProbes), closes after Config.SuccessThreshold
// successful probes (with an empty window), and opens again on any failed
// probe, for an open time multiplied by Config.OpenBackoff up to
// Config.MaxOpenDuration. The open time goes back to OpenDuration on close.
// A probe permit not reported within Config.ProbeTimeout is void: its slot
// is freed and its late report ignored. With Config.ActiveProbes the probes
// are a prober's: AllowProbe grants them, and Allow refuses every call
// while HALF_OPEN with ErrProbing, so that no caller tests the recovery.
//
// State is computed on access: there are no timer goroutines, and an OPEN
// breaker whose time is up becomes HALF_OPEN when next asked. Each state
// change increments a generation; an outcome reported for a permit of an
// earlier generation is ignored, so a call granted while CLOSED that ends
// after a trip cannot sway the half-open probes. Time comes from
// Config.Clock; tests use a clock.Manual.
//
// # Use
//
// The two-step form suits streams and asynchronous calls:
//
//	p, err := b.Allow()
//	if err != nil {
//		return err // errors.Is(err, breaker.ErrNotPermitted)
//	}
//	err = call()
//	p.Done(classify(err))
//
// A caller that takes the permit before waiting to call (in a queue, say)
// calls Permit.Wait first and Permit.Begin when the call starts: the wait
// is then neither in flight nor in Done's time. Report every permit: one
// never reported stays in flight, and slow, until the period ends.
// Do wraps the simple case and classifies errors with Classify. A Registry
// holds one breaker per name. OnStateChange listeners are called in order,
// after the breaker's lock is released. DoneReason and ReportReason add the
// caller's Reason (an outcome kind and a short, secret-free message); the
// breaker keeps, in Snapshot.LastTrip, the Cause of its last trip (the rule
// crossed, a failed probe, Trip, a Store), the Reason of the outcome that
// tripped it and the time.
//
// # Sharing state
//
// A Store shares state between processes: local transitions are published
// to it, a half-open breaker takes the Store's probe lease before probing,
// so that one instance in the cluster probes (a probe is void when the
// lease it was admitted under ends), and CLOSED outcomes are recorded for
// cluster-wide aggregation (SlowInFlight tells a Store the calls in flight
// for SlowCallDuration, to count them too). A failed probe on any instance
// grows the open time of every instance, as one on this instance would. The CLOSED path
// makes no call that can block. MemoryStore is an in-process Store for tests and simulations;
// package redisstore shares state through Redis.
//
// # Measuring
//
// The CLOSED path takes no lock and does not allocate: the state is an
// immutable record behind an atomic pointer, the window is atomic counters
// written only when they change, and the clock is read only when a
// time-based window or slow-call tracking needs it. With slow calls
// tracked, Allow and the report each add one atomic compare-and-swap on
// the in-flight count of the current slice; moving to the next slice takes
// a mutex once per slice width.
//
//	go test -run '^$' -bench . -benchmem -count 6 ./breaker/
//
// runs Allow plus a report (serial, parallel, with a time window; and,
// BenchmarkSlowCalls, with slow calls tracked) and Do beside
// sony/gobreaker/v2 and failsafe-go in the same run; the figures are in
// docs/performance.md.
package breaker
