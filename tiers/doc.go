// Package tiers defines the steps of ragfuse's degradation chain and the
// tier kinds that answer a question: llm (one or more OpenAI-compatible
// model candidates with a RAG prompt), retrieval (knowledge-base articles,
// no model), static (a configured message) and the semantic and stale
// caches.
//
// # Contracts
//
// A Tier answers a Query or returns an error, preferably an *Error whose
// Kind tells the pipeline how to treat the failure (a breaker failure, a
// cooldown, a reason to go to the next tier); it never returns a canned
// text pretending to be an answer. Only the static tier always answers.
// Tiers never print or log: the pipeline turns what happens into events.
//
// The llm tier reaches models only through github.com/sashabaranov/go-openai,
// with clients made by NewClient, which send through an http.Client's Do,
// record the Retry-After of a 429 (go-openai does not expose the headers
// of an error) and send the W3C traceparent of the tracing span in the
// call's context, if any. It tries its candidates in order and stops at the first
// answer, at a failure that is the question's fault (context length,
// content filter, bad request) or when its context ends. Per-candidate
// protection (a breaker per model, a cooldown after 429, the record of
// each attempt) is not built in: the tier asks Query.Guard, a
// CandidateGuard, before each candidate, makes the call with the context
// the guard gives (carrying the call's span) and releases it exactly once
// with the call's outcome, also when the call panics. With no guard, every
// candidate is tried. The other model calls a question makes go behind
// the same kind of guard, as steps with tier names of their own: the
// Condenser's rewrite ("condense"), Rerank.Apply ("rerank", through
// GuardCall) and GuardedEmbedder's embeddings. Their errors are
// classified as a chat call's.
//
// RerankClient calls the Jina/Cohere-compatible rerank API (POST
// {base_url}/rerank) with the standard library's HTTP client.
//
// A StreamTier (the llm tier) streams an answer: text is held back until
// the stream is committed (StreamRequest.CommitAfter characters or
// CommitAfterDuration); before commit a failure moves on to the next
// candidate unseen; after commit it returns the partial answer with
// Answer.Interrupted set. A watchdog ends a stream whose first text or
// next chunk is late. A call asked to Continue a partial answer streams
// only the continuation.
//
// A Query may carry the earlier turns of its conversation (History). An
// llm tier sends its HistoryTurns latest turns before the question,
// within a bound on their size; documents are retrieved for the
// conversation, as the Condenser's standalone rewrite of the question
// when Memo.Condense is set and succeeds, else as a retrieval.FollowUp of
// the question and its earlier user turns; the cache tiers neither serve
// nor store a question with history. HistoryDigest tells conversations
// apart for keys such as the pipeline's flight key.
//
// Memo holds what is done at most once per question and shared by the
// tiers of one run: the embedding and the retrieved documents, failures
// included, and the knowledge-base version the question started on. The
// retrieval has its own time limit (Memo.RetrievalTimeout): an llm tier
// whose time runs out first stops waiting with KindRetrieving, having
// called no model, and the retrieval goes on for the next tier. With
// Memo.Rerank (a Rerank's Apply behind the pipeline's guard) the retrieved
// documents are reranked once; a failed, timed-out or skipped rerank
// keeps the retriever's order, and MinScore drops the documents scored
// below it. The retrieval tier shows each document by its title, the
// passage that answers the question (retrieval.BestPassage) and its URL.
// The semantic cache writes back only complete answers from its StoreFrom
// sources, built on that version with their documents.
//
// # Measuring
//
//	go test -run '^$' -bench 'Upstream/paired-tier$' -benchtime 10000x -count 8 ./pipeline/
//
// pairs the llm tier alone with a bare go-openai call to the same llmtest
// server; docs/performance.md has the figures.
package tiers
