// Package cache is the engine of the semantic_cache and stale_cache tiers:
// embedders that turn questions into vectors, and a per-tenant cache of
// answers found by cosine similarity.
//
// # Embedders
//
// HashEmbedder needs no service: it hashes word unigrams, bigrams of
// adjacent content words and character trigrams (Latin text, lowercased),
// Han characters and character bigrams (Chinese text, no segmenter needed),
// and numbers into signed buckets, then L2-normalizes. Rewordings that keep
// the content words ("How do I return an item?" / "how can I return an
// item") score about 0.99, unrelated questions about 0. OpenAIEmbedder calls
// any OpenAI-compatible embeddings endpoint through go-openai.
//
// # Cache
//
// A Cache is partitioned by tenant: every tenant has its own exact-match
// table (a go-cache keyed by the normalized question), vector index and LRU
// list, and the tenant is never part of the embedded text. A question that
// normalizes to nothing (only punctuation and spaces) is neither stored nor
// matched. Get hits when
//
//   - the normalized question matches exactly, or the most similar entry
//     has cosine similarity >= Config.Similarity (default 0.92; less 1e-5
//     for float32 rounding, so 1 matches the very vector stored);
//   - the entry is fresh by the injected Clock: entries live TTL stretched
//     by a random fraction below Jitter, so entries written together expire
//     at different times;
//   - the entry was built on the knowledge-base version the caller passes
//     (Invalidate frees entries of older versions after a reload);
//   - the false-hit guard below accepts the pair.
//
// GetStale also returns an entry that expired less than Config.Grace ago,
// marked Stale, for stale-if-error. Each tenant holds at most
// Config.MaxEntries entries; Put evicts the least recently used (a hit
// counts as a use). Entries past their grace are swept from Put.
//
// At most Config.MaxTenants tenants are held (default 10000): a new one
// drops the least recently used tenant whole (a Get or Put is a use), and
// the sweep frees a tenant whose entries are all past their grace. Tenants
// share the index's projection planes, so an idle tenant with one entry of
// 256 dimensions costs about 2.9 KB of heap after GC
// (go test -run TestIdleTenantMemory -v ./cache/: 5,000 such tenants).
//
// # False-hit guard
//
// Embeddings of "can I return after 7 days" and "…after 30 days", or of
// "如何开发票" and "如何取消发票", are close, yet the questions need
// different answers. Before a similarity hit is served, the signatures of
// the two questions are compared. A signature holds
//
//   - the numbers in order, normalized (Arabic digits; Chinese numerals
//     before a unit, so "七天" and "7天" agree);
//   - the symbols in order: currency signs, emoji, math signs ("$" and
//     "€", "👍" and "👎" differ);
//   - the polarity classes present: negation (not, no, never, without,
//     cannot, …n't, 不, 没, 无, 未, 别, 非) and cancellation (cancel,
//     unsubscribe, revoke, stop, delete, 取消, 退订, 撤销, 停止, 注销, …);
//     question forms such as 能不能, 是不是, 有没有 are not negations;
//   - the content words: Latin words minus stopwords, lightly stemmed, and
//     Han characters minus stop phrases (如何, 怎么, 请问, 吗, …).
//
// The hit is rejected when the numbers or the symbols differ, when the
// polarity classes differ, or when the content words differ by a minor
// edit: at most two Latin words or four Han characters (a Han character
// counts half) in one question and not the other — the signature of a
// swapped entity ("return shoes" / "return a phone"). Identical content
// passes, and so does a larger rewording, which is left to the similarity
// threshold. The rule is deliberately conservative: a false miss costs one
// model call, a false hit gives a customer a wrong answer. Compatible
// exposes it.
//
// # Index
//
// Brute force over 100k vectors of 256 float32 takes several
// milliseconds, so a tenant's vectors are indexed. Each vector has a
// 256-bit SimHash sketch (signs of its projections on fixed random
// hyperplanes): a vector at cosine c to the query differs from it in each
// sketch bit with probability arccos(c)/π, so the Hamming distance of two
// sketches estimates their angle. A search computes every sketch distance
// in one tight pass (four to a 64-bit word).
//
// A lookup only hits at cosine >= Config.Similarity, so it searches with
// that minimum: a vector whose sketch distance exceeds the binomial mean at
// the threshold's angle plus six standard deviations, sqrt(256·p·(1−p)),
// and two bits (66 of 256 at 0.92, 83 at 0.85) cannot be a hit and is
// neither scored nor returned. A question with no near match, whose best
// entry lies at cosine 0.3 to 0.6, then costs the distance pass alone; one
// with a near match scores a few candidates. Over 238k pairs at cosine
// >= 0.85 no sketch distance came within 1.7 deviations of that bound
// (TestSketchBoundMargin). Below 256 entries the search is exact.
//
// Without a minimum (similarity <= 0, used by tests), below 2048 entries a
// search is exact; above, it keeps the sketches under a cut-off estimated
// from a strided sample and takes the closest n/24 (1024 to 3072), nearest
// first. Either way the candidates are scored on int8 copies of the vectors
// against the query quantized to integers, in batches loaded ahead so that
// their cache misses overlap, until the sketch distance makes a better one
// unlikely (four standard deviations past the distance of the current
// best), and the best 16 of those are scored exactly. Removal swaps the
// last vector into the hole, so eviction is O(1) and memory stays
// proportional to the entries; a search reuses the tenant's scratch
// buffers.
//
// Recall@1 is measured for the lookup's semantics: the share of queries
// for which the search at a threshold answers as an exact (brute-force)
// lookup at the same threshold does, that is with the same best entry when
// exact search finds one at >= the threshold, and with none when it finds
// none. Queries are synthetic English and Chinese questions: half stored
// questions reworded (a stopword or stop phrase added: "please …", "请问…";
// 97% are hits at 0.92, all at 0.85), half unrelated (none are hits). A
// second set rewords by swapping a content word instead, which puts the
// queries near the threshold (0 to 2% hits at 0.92, 36 to 42% at 0.85). At
// 1k, 10k and 100k entries, at similarity 0.92 and 0.85, recall@1 is 1.0
// for both halves of both sets (TestIndexThresholdRecall).
// Unthresholded top-1 recall against exact search (TestIndexRecall) is 1.0
// at 1k, 0.99 at 10k and 0.9925 at 100k.
//
//	go test -run 'TestIndexRecall|TestIndexThresholdRecall|TestSketchBoundMargin' -v ./cache/  # recall at 1k, 10k, 100k (100k not with -short)
//	go test -run XXX -bench 'Lookup|IndexSearch|Put' -count 5 ./cache/                        # lookup at 1k, 10k, 100k, next to brute force; Put
//
// On a shared 2-core machine a lookup (BenchmarkLookup: half reworded,
// half unrelated questions, embedding excluded) costs about 0.42 ms of CPU
// time at 100k entries (1.0 ms before the threshold-aware search), 0.066 ms
// at 10k (0.22) and 0.022 ms at 1k (0.047); a Put into a full tenant costs
// about 21 µs. The benchmarks report CPU time per lookup (cpu-ns/op) beside
// wall time, because other load on a shared machine inflates the latter.
//
// Everything in this package is safe for concurrent use unless its
// documentation says otherwise.
package cache
