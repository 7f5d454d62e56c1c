// Package tiers defines the steps of ragfuse's degradation chain and the
// tier kinds that answer a question: llm (one or more OpenAI-compatible
// model candidates with a RAG prompt), retrieval (knowledge-base articles,
// no model), static (a configured message) and the semantic and stale
// caches.
//
// A Tier answers a Query or returns an error, preferably an *Error whose
// Kind tells the pipeline how to treat the failure (a breaker failure, a
// cooldown, a reason to go to the next tier). Tiers never print or log;
// the pipeline turns what happens into events.
//
// The llm tier reaches models only through github.com/sashabaranov/go-openai.
// Per-candidate protection (a breaker per model, a cooldown after HTTP 429,
// the record of each attempt) is not built into the tier: it asks a
// CandidateGuard, which the pipeline supplies through the context (see
// WithGuard). Used on its own, with no guard, an LLM tries every candidate
// in order on each question.
//
// NewClient makes the go-openai client of a candidate. It records the
// Retry-After of a 429, and sends each request straight through its
// http.Client's Transport: Client.Do's bookkeeping for redirects costs
// about 1.5% of a call to a model that answers at once. A client with a
// cookie jar or a Timeout and a base URL with user information go through
// Client.Do, and a redirect is handed to Client.Do to follow, so
// redirects, cookies and timeouts behave as they do there.
package tiers
