// Package retrieval finds the knowledge-base documents behind a RAG
// prompt and behind the retrieval-only tier, which answers when every
// model service is down.
//
// # Retrievers
//
// Retriever is the one interface a RAG application implements to plug in
// its own search (a vector database, say). VectorRetriever also accepts a
// query embedding computed elsewhere, so the semantic cache and a hybrid
// retriever share one embedding per question; NoVector says the embedding
// failed and must not be tried again.
//
// The default retriever needs no model service: Index, a BM25 index
// (k1 = 1.2, b = 0.75) over title (weight 3), tags and body. Han text is
// indexed as overlapping character bigrams plus single characters (common
// particles and question-word bigrams such as 怎么 and 如何 dropped);
// English is lowercased, stop and question words removed and plurals,
// -ing, -ed and a final e stripped; words of other scripts keep their
// combining marks; Thai, Lao, Khmer and Myanmar, written without spaces,
// are indexed as pairs of adjacent characters with their marks. A short
// table of synonyms (broken/faulty, 退钱/退款, fix/repair…) widens queries
// at half weight. Results are copies, best first, ties broken by ID.
//
// # Relevance floor
//
// A question the knowledge base does not cover gets no documents, so that
// the retrieval tier declines and the static message answers instead of
// unrelated articles. Index keeps only documents that cover at least
// IndexConfig.MinCoverage (default 0.14) of the question's content:
//
//   - the content is each English word and each Chinese character of the
//     question outside the stop words, weighted by its IDF, so a word no
//     document has (penguin, 鹅) weighs the most;
//   - a document covers a word it contains, or a synonym of it, and a
//     Chinese character through a two-character term of the question
//     containing it (企 of 企业 does not cover the 企 of 企鹅);
//   - a cover counts in full from the title or tags and at 0.3 from the
//     body alone or from a lone character.
//
// The rule depends only on the question and the documents; a negative
// MinCoverage turns it off. Hybrid applies the same idea on its vector
// side: a document reached by vector search alone needs
// HybridConfig.MinSimilarity (default 0.3).
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
// # Knowledge base and hybrid search
//
// KnowledgeBase loads Markdown articles with front matter and JSON Lines
// files (see OpenFS), indexes them and serves Retrieve from an immutable
// snapshot. Reload re-reads the source and swaps the snapshot atomically:
// questions already running finish on the old one, a failed reload keeps
// it, and Version goes up by one per successful reload, so answers cached
// from older documents can be dropped.
//
// Hybrid blends the lexical score with the cosine similarity of an
// Embedder's vectors, over the lexical candidates plus the nearest
// documents by vector. Document vectors are computed once per document
// version. The keyword hits and the vector ranking come from one
// knowledge-base version, even across a reload. If the embedder fails,
// Hybrid answers with the lexical results alone and reports the failure
// to HybridConfig.OnFallback; a question never fails because of it.
//
// The index is a few hundred lines with no dependencies, sized for a help
// centre's few hundred or thousand short documents held in memory and
// rebuilt on reload, where a general-purpose engine such as Bleve would
// bring dozens of modules.
//
// # Measuring
//
//	go test -run '^$' -bench 'NewIndex|Retrieve|Hybrid' ./retrieval/
//	go test ./retrieval -run 'TestRecallAt3|TestOutOfDomainGetsNoDocuments|TestConfusablePairs' -v
//	go test ./retrieval -run 'TestFollowUp' -v
//
// The first times building the index and a query over testdata/kb and
// 10,000 synthetic documents, and hybrid blending; the second measures
// recall@3 over the paraphrased questions of testdata/kb-eval.jsonl, the
// share of the out-of-domain questions of testdata/kb-ood.jsonl that get
// no documents, and that questions differing in one word or number rank
// different articles first; the third, recall@3 of the follow-up query
// beside the bare question over testdata/kb-followups.jsonl. The weights,
// synonyms and floor were tuned on these sets, so their figures
// (docs/performance.md) are optimistic for unseen questions.
package retrieval
