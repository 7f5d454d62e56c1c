// Package retrieval finds the knowledge-base documents behind a RAG
// prompt and behind the retrieval-only tier, which answers when every
// model service is down.
//
// Retriever is the one interface a RAG application implements to plug in
// its own search; VectorRetriever also takes a query embedding computed
// elsewhere, so the semantic cache and a hybrid retriever share one
// embedding per question.
//
// # Index
//
// The default retriever needs no model service: Index, a BM25 index
// (k1 = 1.2, b = 0.75) over title (weight 3), tags and body, built in
// memory with no dependencies. Han text is indexed as character bigrams
// plus single characters (particles such as 的 and question-word bigrams
// such as 怎么 dropped); Thai, Lao, Khmer and Myanmar as pairs of adjacent
// characters; other scripts word by word with their combining marks.
// English is lowercased, stop words dropped and stemmed: plurals, -ing,
// -ed, -ment, -ation, -ity, -able, -al, -ly, irregular past forms (paid,
// bought) and number words (seven: 7), so "payments" finds "pay" and
// "cancellation" finds "cancel". A table of synonyms widens queries at
// half weight: words (broken/faulty, 退钱/退款) and phrases that stand for
// a word when their terms come in a row ("money back" for refund, 不想要
// for 无理由). Results are copies, best first, ties broken by ID.
//
// # Relevance
//
// A question the knowledge base does not cover must get no documents, so
// that the retrieval tier declines and the static message answers. Index
// keeps only documents that cover IndexConfig.MinCoverage (default 0.14)
// of the question's content, each word or Chinese character weighted by
// its IDF, a cover counting in full from the title or tags and 0.3 from
// the body or a lone character. Hybrid keeps a document reached by vector
// search alone only if its similarity stands HybridConfig.MinRelevance
// (default 5) standard deviations above the question's mean similarity to
// the corpus: a rule about the question and the corpus, not the
// embedder's scale, so an embedder without signal or one whose unrelated
// texts all score 0.75 adds no articles to an out-of-domain question.
// Package embedtest holds such embedders for tests.
//
// # Follow-ups
//
// RetrieveFollowUp searches for a FollowUp ("and who pays the postage?"
// after "I want to return a jacket") without any model: the question's
// terms count in full, the words of its last ContextTurns earlier user
// turns that some document contains at ContextWeight, halving per older
// turn, in the score and the floor; they can let a document over the
// floor but never keep one out.
//
// # Knowledge base and hybrid retrieval
//
// KnowledgeBase loads Markdown articles with front matter and JSON Lines
// files (see OpenFS) and serves Retrieve from an immutable snapshot.
// Reload swaps the snapshot atomically; a failed reload keeps the old one
// and Version counts successful loads.
//
// Hybrid blends the normalized lexical score with the vector share of
// each document (its standing over 4 standard deviations, in [0, 1]). The
// corpus's document vectors are computed in the background after
// StartVectors, the first question or a reload, BatchSize documents per
// call with at most Concurrency calls at once, progress in the log; until
// they are ready questions are ranked lexically and VectorStatus says so,
// so embedding the corpus never takes a question's time. Unchanged
// documents keep their vectors across reloads; a failed run is retried by
// a question after RetryDelay. If the embedder fails, the question is
// answered lexically and OnFallback hears of it. Close stops the
// background work.
//
// BestPassage quotes the paragraph or sentence window of a document that
// answers a question best, by BM25 over the document's passages.
// RerankDocs reorders documents by a Reranker's scores and drops those
// below a minimum.
//
// The index is a few hundred lines with no dependencies, sized for a help
// centre's few hundred or thousand short documents held in memory and
// rebuilt on reload, where a general-purpose engine such as Bleve would
// bring dozens of modules.
//
// # Measuring
//
//	go test -run '^$' -bench 'NewIndex|Retrieve|Hybrid|BestPassage|FollowUp' ./retrieval/
//	go test ./retrieval -run 'TestRecallAt3|TestRecallHeldout|TestOutOfDomain|TestStandingFigures|TestConfusablePairs' -v
//	go test ./retrieval -run 'TestFollowUp' -v
//
// The first times the index, queries, blending, passages and follow-ups;
// the second measures recall@3 over testdata/kb-eval.jsonl (the
// development set the stemmer, synonyms and floors are tuned on) and
// kb-eval-heldout.jsonl (never tuned on; its misses are not logged), the
// out-of-domain questions of kb-ood.jsonl and made-up ones that get no
// documents, lexically and under each test embedder, and the standings
// behind DefaultMinRelevance; the third, recall@3 of the follow-up query
// beside the bare question over testdata/kb-followups.jsonl. The figures
// are in docs/performance.md.
package retrieval
