// Package ragfuse is a layered degradation framework for RAG question
// answering. A question goes down an ordered chain of tiers until one
// answers:
//
//	semantic cache -> primary LLM -> fallback LLM -> stale cache -> retrieval-only -> static message
//
// Each tier is guarded by its own circuit breaker and time limiter (model
// tiers also by a bulkhead), and every answer carries the tier that
// produced it, so a customer-service frontend can tell the user honestly
// how it was made. The user never gets a bare error.
//
// The packages, from the bottom up:
//
//   - breaker: circuit breakers with sliding windows and shared state;
//   - cache: embedders and the per-tenant semantic cache;
//   - retrieval: the Retriever interface, knowledge-base loading and the
//     default BM25 index, which needs no model service;
//   - tiers: the Tier interface and the tier kinds; tiers/llmtest is a
//     fault-injecting OpenAI-compatible server for tests and drills;
//   - pipeline: composes tiers behind guards, with deadlines, rate limits
//     and events;
//   - config: reads the YAML configuration and builds a pipeline from it;
//   - api: the HTTP server; drill runs scripted outages; cmd/ragfuse: the
//     serve, chaos and drill commands.
//
// This root package only carries the demo's data: KnowledgeBase, the
// embedded knowledge base used when `ragfuse serve` runs without a config.
package ragfuse
