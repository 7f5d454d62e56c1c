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
// Ignored outcomes (a cancelled caller, a request at fault) count nowhere.
// The rates are judged after every recorded outcome.
//
// OPEN rejects every call with ErrOpen for Config.OpenDuration. After that
// the breaker is HALF_OPEN: it admits at most Config.HalfOpenMaxCalls probes
// at once (others get ErrTooManyProbes), closes after Config.SuccessThreshold
// successful probes (with an empty window), and opens again on any failed
// probe, for an open time multiplied by Config.OpenBackoff up to
// Config.MaxOpenDuration. The open time goes back to OpenDuration on close.
// A probe permit not reported within Config.ProbeTimeout is void: its slot
// is freed and its late report ignored.
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
// cluster-wide aggregation. A failed probe on any instance grows the open
// time of every instance, as one on this instance would. The CLOSED path
// makes no call that can block. MemoryStore is an in-process Store for tests and simulations;
// package redisstore shares state through Redis.
//
// # Measuring
//
// The CLOSED path takes no lock and does not allocate: the state is an
// immutable record behind an atomic pointer, the window is atomic counters
// written only when they change, and the clock is read only when a
// time-based window or slow-call tracking needs it.
//
//	go test -run '^$' -bench . -benchmem -count 6 ./breaker/
//
// runs Allow plus a report (serial, parallel, with a time window) and Do
// beside sony/gobreaker/v2 and failsafe-go in the same run; the figures
// are in docs/performance.md.
package breaker
