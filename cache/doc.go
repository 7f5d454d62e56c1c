// Package cache is the engine of the semantic_cache and stale_cache tiers:
// embedders that turn questions into vectors, and a per-tenant cache of
// answers found by cosine similarity. Everything in it is safe for
// concurrent use unless its documentation says otherwise.
//
// # Embedders
//
// Embedder is the project's one embedding interface. HashEmbedder needs no
// service: it hashes word unigrams, bigrams of adjacent content words and
// character trigrams (Latin text, lowercased), Han characters and
// character bigrams (Chinese, no segmenter needed) and numbers into signed
// buckets, then L2-normalizes; rewordings that keep the content words
// score about 0.99, unrelated questions about 0. OpenAIEmbedder calls any
// OpenAI-compatible embeddings endpoint through go-openai and checks the
// shape of what comes back (ErrEmbeddingShape, ErrNoEmbeddings).
//
// # Cache
//
// A Cache is partitioned by tenant: every tenant has its own exact-match
// table keyed by the normalized question, vector index and LRU list, and
// the tenant is never part of the embedded text. A question that
// normalizes to nothing is neither stored nor matched. Get hits when the
// normalized question matches exactly or the most similar entry has cosine
// similarity >= Config.Similarity (default 0.92, less 1e-5 for float32
// rounding); the entry is fresh by the injected Clock (TTL stretched by a
// random fraction below Jitter, so entries written together expire
// apart); it was built on the knowledge-base version the caller passes
// (Invalidate frees older ones after a reload); and the false-hit guard
// accepts the pair. GetStale also returns an entry that expired less than
// Config.Grace ago, marked Stale. Each tenant holds at most
// Config.MaxEntries; Put evicts the least recently used and sweeps entries
// past their grace.
//
// At most Config.MaxTenants tenants are held (default 10000): a new one
// drops the least recently used tenant whole (a Get or Put is a use), and
// the sweep frees a tenant whose entries are all past their grace. Tenants
// share the index's projection planes, so an idle tenant with one entry of
// 256 dimensions costs about 2.9 KB of heap after GC
// (go test -run TestIdleTenantMemory -v ./cache/: 5,000 such tenants).
//
// # Sharing
//
// A Cache built with Config.Replica hands every entry Put stores to it,
// with no lock held, so that other instances receive it (package
// rediscache shares a Cache through Redis). Restore stores an entry
// received from another instance with its own creation and expiry times,
// under the same caps, and never replaces a newer entry for the question.
//
// # False-hit guard
//
// "can I return after 7 days" and "…after 30 days", or "如何开发票" and
// "如何取消发票", embed close yet need different answers. Before a
// similarity hit is served, the signatures of the two questions are
// compared (Compatible): the numbers in order (Chinese numerals before a
// unit normalized, so 七天 and 7天 agree), the symbols in order (currency,
// emoji, math signs), the polarity classes present (negation: not, never,
// …n't, 不, 没, 无; cancellation: cancel, revoke, 取消, 退订, …; question
// forms such as 能不能 are not negations) and the content words (Latin
// words minus stopwords, lightly stemmed; Han characters minus stop
// phrases). The hit is rejected when the numbers, symbols or polarity
// classes differ, or when the content words differ by a minor edit (at
// most two Latin words or four Han characters, a Han character counting
// half): a swapped entity. A larger rewording is left to the threshold. A
// false miss costs one model call; a false hit gives a wrong answer.
//
// # Index
//
// A tenant's vectors are indexed by 256-bit SimHash sketches: a vector at
// cosine c to the query differs in each bit with probability arccos(c)/π,
// so a search computes every sketch distance in one pass and scores only
// the vectors whose distance is within the binomial mean at the
// threshold's angle plus six standard deviations and two bits; they are
// scored on int8 copies, batch by batch, until the sketch distance makes
// a better one unlikely, and the best 16 exactly. Below 256 entries the
// search is exact. Without a threshold (tests) it keeps the closest n/24
// sketches above 2048 entries. Removal swaps the last vector into the
// hole, so eviction is O(1). A lookup answers as an exact lookup at the
// same threshold would: the tests hold recall@1 at or above 0.98 at 1k,
// 10k and 100k entries, at similarity 0.92 and 0.85, for reworded and
// near-threshold questions.
//
// # Measuring
//
//	go test -run 'TestIndexRecall|TestIndexThresholdRecall|TestSketchBoundMargin' -v ./cache/
//	go test -run '^$' -bench 'Lookup|IndexSearch|Put' -count 5 ./cache/
//
// The first prints recall at 1k, 10k and 100k entries (100k not with
// -short); the second times a lookup (half reworded, half unrelated
// questions, embedding excluded) beside brute force, and a Put. The
// benchmarks report CPU time per lookup (cpu-ns/op) beside wall time,
// which other load on a shared machine inflates. Figures:
// docs/performance.md.
package cache
