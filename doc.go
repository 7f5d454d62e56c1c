// Package ragfuse is a layered degradation framework for RAG question
// answering. A question goes down an ordered chain of tiers until one
// answers:
//
//	semantic cache -> primary LLM -> fallback LLM -> stale cache -> retrieval-only -> static message
//
// Each tier is guarded by its own circuit breaker and time limit (model
// tiers also by a bulkhead, each model by its own breaker and cooldown),
// and every answer carries the tier that produced it, so a
// customer-service frontend can tell the user honestly how it was made.
// The user never gets a bare error: the static message always answers.
//
// The packages, from the bottom up; nothing imports a package above it:
//
//   - clock: the one Clock of the project, with the system and manual
//     clocks;
//   - breaker: circuit breakers with sliding windows and shared state;
//     breaker/redisstore shares them, and rate limits, through Redis;
//   - cache: embedders and the per-tenant semantic cache;
//   - retrieval: the Retriever interface, knowledge-base loading and the
//     default BM25 index, which needs no model service;
//   - tiers: the Tier interface and the tier kinds; tiers/llmtest is a
//     fault-injecting OpenAI-compatible server for tests and drills;
//   - pipeline: the runtime chain: the stage loop, its guards, the
//     deadline budget, admission, flights, classification and events;
//   - config: reads the YAML configuration and builds a pipeline from it;
//   - api: the HTTP server; drill: scripted outages; cmd/ragfuse: the
//     serve, chaos and drill commands.
//
// This root package only carries the demo's data: KnowledgeBase, the
// embedded knowledge base used when `ragfuse serve` runs without a config.
//
// # Measuring
//
//	go test ./...                                    # with Redis at RAGFUSE_TEST_REDIS_URL
//	go test -run '^$' -bench . -benchmem ./breaker/ ./pipeline/ ./api/
//
// docs/performance.md holds the current figures and the command of each.
package ragfuse
