// Package redisstore is a breaker.Store that shares circuit breaker state
// between processes through Redis (any Redis 6 or later), so that several
// ragfuse instances agree on which dependencies are down. It also provides
// a Limiter for rate limits shared by the same processes, and shares their
// 429 cooldowns and knowledge-base reloads.
//
// # What is shared
//
//   - Transitions. A breaker's trip, close or failed probe is announced
//     through Publish: the store hands it at once to the other breakers of
//     that name in this process, and its worker writes it under
//     <prefix>:breaker:<name>:state and PUBLISHes it on
//     <prefix>:breaker:events. Every store subscribes to that channel and
//     applies what others announce (breaker.Breaker.Apply). On every
//     (re)subscription, and when a breaker attaches, the store reads the
//     stored states once: an instance that was away catches up without any
//     polling. HALF_OPEN is not announced: each process turns half-open by
//     itself when the shared open time ends.
//   - Outcomes. Record adds a CLOSED outcome to atomic counters per name.
//     Every FlushInterval the worker sends the counts, in one pipeline, as
//     HINCRBY into time buckets <prefix>:breaker:<name>:w:<n> (expiring
//     after the window), reads the window back and trips the breaker (and
//     so, through Publish, every instance) when the cluster-wide counts
//     cross its thresholds (Config.MinimumCalls, FailureRate,
//     SlowCallRate). The window is the breaker's own time window when it
//     has one, else Config.Window. Each instance still judges its own
//     window too, consecutive failures included.
//   - The probe. A half-open breaker probes only with the cluster-wide
//     lease: SET <prefix>:breaker:<name>:probe <instance> NX PX <lease>,
//     the lease being the breaker's ProbeTimeout, so that it expires if the
//     prober dies. The probe's result is announced like any transition: a
//     success closes the breaker everywhere, a failure opens it everywhere
//     again, and the lease of the failed probe ends when that open time
//     does (PEXPIREAT, on the announcer's clock), so that the next
//     half-open period takes a new one and no instance that has not yet
//     heard of the failure probes before.
//   - Cooldowns. ShareCooldown writes <prefix>:cooldown:<model> (the
//     absolute until-time, expiring then; an end, written by a breaker
//     reset, expires after StateTTL), lists the model in the set
//     <prefix>:cooldowns and PUBLISHes on <prefix>:cooldown:events; the
//     others hand it to their OnCooldown function. On every
//     (re)subscription and after an outage the stored ones are read again.
//   - Reloads. RequestReload PUBLISHes a reload id on <prefix>:kb:events;
//     every other store runs its OnReload function with it, one at a time.
//     SetMember writes an instance's knowledge-base state (version,
//     digest, last reload id) under <prefix>:kb:member:<instance>, listed
//     in the set <prefix>:kb:members, every MemberTTL/3 and expiring after
//     MemberTTL (15s); Members reads the live ones.
//
// # Staleness
//
// An announcement reaches the other instances after the worker's round
// trip that carries it (the worker is woken at once; at worst it first
// finishes the round trip under way, bounded by OpTimeout) and one pub/sub
// delivery (BenchmarkPropagation); so does a cooldown or its end
// (BenchmarkCooldownPropagation). Aggregated counts are late by at most
// FlushInterval + OpTimeout (100ms with the defaults): an outcome is
// counted cluster-wide at the next flush, and the instance whose flush
// crosses the threshold trips the cluster. Counts of a period that ended
// with a transition are discarded, as is the window in Redis.
//
// # When Redis is slow or down
//
// No call of a breaker's CLOSED path touches Redis, and no call waits on
// it: Publish and Record only hand work to the worker; AcquireProbe and
// Limiter.Allow, the only calls made on a question's path, are bounded by
// Config.OpTimeout (50ms). The first failed call marks the store unhealthy
// (Healthy reports it) and logs one warning; from then AcquireProbe answers
// true without asking Redis (each instance probes for itself),
// Limiter.Allow returns ErrUnavailable at once (callers use their local
// limiters), counts are dropped (each instance's own window still judges
// them) and announcements wait, latest per name. The worker pings Redis
// every RetryInterval; go-redis reconnects by itself. On the first success
// it logs once, sends the waiting announcements and resyncs: it reads the
// shared state of every attached breaker, applies it, and announces again
// any local open that Redis does not hold, so that an outage's trips reach
// the cluster. Cooldowns wait likewise (latest per model) and the stored
// ones are read again; Members and RequestReload, admin calls, fail with
// ErrUnavailable.
//
// # Measuring
//
// No call of the CLOSED path touches Redis or allocates: the Store binds
// each breaker to its name's counters (breaker.Binder), so an outcome
// costs an interface call and an atomic add on a striped counter
// (striped.go).
//
//	go test -run '^$' -bench AllowReport -benchtime=300ms -count=6 ./breaker/redisstore/
//	go test -run '^$' -bench Propagation -count=6 ./breaker/redisstore/
//
// The first runs Allow plus a successful report with no store, a
// breaker.MemoryStore and this Store, serially and in parallel; the second
// times a trip and a reset, and a cooldown and its end, each seen by
// another instance. Both need Redis
// (RAGFUSE_TEST_REDIS_URL); the figures are in docs/performance.md.
package redisstore
