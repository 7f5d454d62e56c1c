// Package pipeline runs a question down ragfuse's ordered tiers until one
// answers, each tier guarded against a failing or slow service. Ask returns the answer; Stream sends it as events. Every tier
// and model considered, skipped ones included, is in Result.Attempts and
// goes to the Observer as an event; nothing here prints or logs.
//
// # Composition
//
// The guards wrap a question and each tier's call in this order,
// outermost first; Ask and Stream run the same stage loop:
//
//	admission    global and per-tenant rate limits (Options.Limiter shares them);
//	             over a limit: each model stage is skipped (over_quota), or with
//	             RateLimitConfig.Reject the question gets ErrRejected
//	flight       identical questions in flight (same tenant, same history
//	             digest, question trimmed, spaces collapsed, lower-cased; see
//	             flightKey) share one run, Ask's and Stream's apart
//	hedge        a stage silent (streaming: no text) for HedgeAfter is joined by
//	             the next model stage; the first answer wins, the other ends as
//	             hedged; neither: the loop goes on, the hedging stage left out
//	per stage, in order:
//	  budget     the call's time limit: min(the tier's Timeout, the time left less
//	             the reserves of the later stages, see Stage.Reserve); none left:
//	             skipped (budget_exhausted), except the last stage
//	  breaker    "tier/<name>" open: skipped (breaker_open), except a static tier,
//	             the answer of last resort
//	  bulkhead   Stage.Bulkhead full past its queue timeout: skipped (bulkhead_full)
//	  time limit a child context that ends with the limit: the call is cancelled
//	  tier       the call, classified before the guards around it hear it; an llm
//	             tier calls each model candidate through the call's guard: cooling
//	             down after a 429 (cooling_down) or breaker "model/<id>" open
//	             (breaker_open): skipped
//
// The budget is Options.RequestTimeout from when Ask was called, or the
// caller's shorter deadline; no call outlives it. Once per question
// (tiers.Memo) the documents are retrieved, under their own time limit
// (Options.RetrievalTimeout: a tier whose time runs out waiting calls no
// model and ends as retrieving), and the question embedded. The models of
// Options.EmbedderModel, Options.Condenser and Options.Rerank are guarded
// like a chat model (auxGuard: breaker, cooldown, attempts of tier
// "condense" or "rerank"); a failed rerank keeps the retriever's order.
// Options.Vectors embeds the documents in the background, never inside a
// question's time.
//
// A model of Options.Probes is probed actively (see Probe): questions
// skip it while half-open and a prober tests its recovery; a tier's
// breaker "tier/<name>" is not probed: its probes are questions.
//
// # Classification
//
//	outcome                                         breaker   next
//	success                                         success   return (slow past slow_call_duration)
//	timeout, connection, 5xx, malformed, empty,     failure   next candidate or tier
//	401/403, a stream broken after commit, other
//	429                                             ignored   the model cools down for Retry-After
//	                                                          (at most 24h) or its cooldown
//	400 (context length, content filter, other),    ignored   next tier
//	cache miss, no documents, every candidate skipped,
//	the time ran out waiting for documents (retrieving)
//	caller gone (its context ended or its deadline  ignored   stop: ctx.Err()
//	passed), a receiver's error in Stream
//	hedged: cancelled, the hedge's other call won   slow past slow_call_duration (a
//	                                                          probe: failure), else ignored
//
// A breaker hears each failure with its kind and description, kept as its
// trip reason (breaker.Snapshot.LastTrip).
//
// # Cluster
//
// With Options.Cluster, cooldowns (with their absolute until-time, so they
// end everywhere at once) and knowledge-base reloads are shared with the
// other instances (see Cluster, ReloadCluster); nothing on a question's
// path waits on the cluster.
//
// # Tracing
//
// With Options.Tracer, each stage call is a span "tier/<name>" and each
// model call a span "model/<id>" inside it (ragfuse.tier, ragfuse.outcome,
// gen_ai.request.model, tokens), children of the span in the question's
// context; a model client sends its span upstream as traceparent.
//
// A caller that joined a flight returns its own ctx.Err() if its context
// ends first (see flightGroup). A panic in the pipeline's code is returned
// as an error with its stack; a tier's is a failure of that tier.
//
// # Streaming
//
// Model tiers (tiers.StreamTier) stream; other tiers send their answer as
// one delta. Events come in order: meta when a tier commits, the deltas, a
// note if the answer broke off, done with the Result. Before commit
// (StreamConfig: CommitAfter characters or CommitAfterDuration) a failure,
// a first token later than FirstTokenTimeout or a gap past StallTimeout
// moves on invisibly. After commit a break ends the answer with the
// partial text and the note, or, with ContinueOnBreak, the next model
// tier continues it (never after a content-filter stop).
// The breakers hear a stream's outcome when it ends; interrupted and
// continued answers are not cached. Identical streams share one run
// (streamFlight): a caller that leaves leaves the others theirs.
//
// # Measuring
//
//	go test -run '^$' -bench AskOverhead -benchmem -count 6 ./pipeline/
//	go test -run '^$' -bench 'Upstream/paired$' -benchtime 10000x -count 8 ./pipeline/
//	go test -run '^$' -bench StreamChunks -benchmem -benchtime 2000x -count 8 ./pipeline/
//
// (every guard; an llm tier beside a bare go-openai call; a streamed
// answer). The figures are in docs/performance.md.
package pipeline
