package retrieval

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"

	"github.com/ragfuse/ragfuse/cache"
)

// HybridConfig configures a Hybrid retriever. Zero fields take the
// defaults given.
type HybridConfig struct {
	// Lexical finds candidates by words and scores them; required. A
	// *KnowledgeBase (or anything with Docs() []Doc and Version() uint64)
	// also lets vector search reach documents that share no word with the
	// question; any other Retriever is blended over its candidates only.
	Lexical Retriever
	// Embedder embeds questions and documents. Nil means lexical only.
	Embedder cache.Embedder
	// Weight is the share of cosine similarity in the blended score, in
	// (0, 1]; the rest is the normalized lexical score. Default 0.5; values
	// outside the range are clamped.
	Weight float64
	// Candidates is how many lexical and how many vector hits are blended
	// for a request of k documents: max(Candidates, 3k). Default 20.
	Candidates int
	// BatchSize is how many documents go to the Embedder per call.
	// Default 32.
	BatchSize int
	// MaxTextBytes truncates a document (title and text) before it is
	// embedded, on a UTF-8 boundary. Default 2000.
	MaxTextBytes int
	// MinSimilarity is the cosine similarity a document needs to enter the
	// results through vector search alone (sharing no word with the
	// question). It keeps a question about something the knowledge base
	// does not cover from being answered with unrelated articles. Default
	// 0.3; a negative value admits every vector hit.
	MinSimilarity float64
	// OnFallback, if set, is called with the error each time a question is
	// answered by the lexical score alone because embedding failed. It is
	// called without locks held and must be safe for concurrent use.
	OnFallback func(err error)
}

// Hybrid blends BM25 with the cosine similarity of embeddings. Document
// vectors are computed on first use and kept until the documents change
// (a new knowledge-base version re-embeds only changed documents). When
// the embedder fails, Hybrid answers from the lexical retriever alone, so
// a sick embedding service never fails a question. A Hybrid is safe for
// concurrent use.
type Hybrid struct {
	cfg  HybridConfig
	seed maphash.Seed

	// sem (capacity 1) serializes embedding of documents and guards vecs
	// and version: a ctx-aware mutex, so a waiting question can give up.
	sem     chan struct{}
	vecs    map[uint64][]float32 // document content hash -> vector
	version uint64               // corpus version that cur belongs to
	cur     [][]float32          // vectors of that version's documents, in order
}

var _ VectorRetriever = (*Hybrid)(nil)

// corpus is a Retriever whose whole document set can be listed.
type corpus interface {
	Docs() []Doc
	Version() uint64
}

// errDimension reports vectors of different lengths.
var errDimension = errors.New("retrieval: embedding dimensions differ")

// errNotFinite reports a question vector with a NaN or infinite component.
var errNotFinite = errors.New("retrieval: the question's embedding is not finite")

// errVersionChanged reports that a corpus changed version during a question.
var errVersionChanged = errors.New("retrieval: the documents changed during the question")

// maxCorpusTries bounds how often a question over a corpus other than a
// *KnowledgeBase starts again because the corpus changed version while it
// ran; after that it is answered by the lexical score alone.
const maxCorpusTries = 3

// maxCachedVectors bounds the vector cache of a Hybrid over a Retriever
// that is not a corpus; the cache is cleared when it is full.
const maxCachedVectors = 10000

// NewHybrid returns a hybrid retriever. cfg.Lexical must not be nil.
func NewHybrid(cfg HybridConfig) *Hybrid {
	if cfg.Weight <= 0 || math.IsNaN(cfg.Weight) {
		cfg.Weight = 0.5
	}
	cfg.Weight = min(cfg.Weight, 1)
	if cfg.MinSimilarity == 0 || math.IsNaN(cfg.MinSimilarity) {
		cfg.MinSimilarity = 0.3
	}
	if cfg.Candidates <= 0 {
		cfg.Candidates = 20
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 32
	}
	if cfg.MaxTextBytes <= 0 {
		cfg.MaxTextBytes = 2000
	}
	return &Hybrid{
		cfg:  cfg,
		seed: maphash.MakeSeed(),
		sem:  make(chan struct{}, 1),
		vecs: make(map[uint64][]float32),
	}
}

// Retrieve embeds query and returns the k best documents by blended score;
// see RetrieveVector.
func (h *Hybrid) Retrieve(ctx context.Context, query string, k int) ([]Doc, error) {
	return h.RetrieveVector(ctx, query, nil, k)
}

// RetrieveVector returns the k best documents for query, best first, with
// Score set to (1-Weight)*lexical/maxLexical + Weight*max(cosine, 0); ties
// are broken by ID. vec is the query's embedding if the caller has it;
// when nil the query is embedded here; NoVector ranks by the lexical score
// alone. If embedding the query or the
// documents fails, the query's vector is not finite, or the dimensions
// differ, the lexical results are returned unchanged (with their BM25
// scores); a document whose vector is not finite gets cosine 0. The
// lexical hits and the documents vector search ranks come from one version
// of the corpus, however it reloads meanwhile. A done ctx gives ctx.Err();
// a lexical error is returned as is.
func (h *Hybrid) RetrieveVector(ctx context.Context, query string, vec []float32, k int) ([]Doc, error) {
	return h.retrieve(ctx, FollowUp{Question: query}, vec, k)
}

// retrieve is RetrieveVector for f: the lexical side searches for the
// follow-up (see Index.RetrieveFollowUp), the vector side by f.Text().
func (h *Hybrid) retrieve(ctx context.Context, f FollowUp, vec []float32, k int) ([]Doc, error) {
	query := f.Text()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, nil
	}
	n := max(h.cfg.Candidates, 3*k)
	for try := 1; ; try++ {
		src := h.source()
		lex, err := RetrieveFollowUp(ctx, src.lexical, f, n)
		if err != nil || h.cfg.Embedder == nil || isNoVector(vec) || len(tokens(query)) == 0 {
			return trim(lex, k), err
		}
		if vec == nil { // embedded once, kept if the question starts again
			vec, err = h.embedQuery(ctx, query)
		}
		var out []Doc
		if err == nil {
			out, err = h.blend(ctx, src, vec, lex, n, k)
		}
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, errVersionChanged) && try < maxCorpusTries:
			continue
		case errors.Is(err, errVersionChanged):
			return trim(lex, k), nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if h.cfg.OnFallback != nil {
			h.cfg.OnFallback(err)
		}
		return trim(lex, k), nil
	}
}

// source is what one question is answered from: the lexical retriever and,
// over a corpus, the documents of the same version.
type source struct {
	lexical Retriever
	snap    *snapshot // a *KnowledgeBase's snapshot, loaded once
	corpus  corpus    // another corpus, whose version is checked again later
	version uint64    // corpus.Version() before the lexical search
}

func (h *Hybrid) source() source {
	switch c := h.cfg.Lexical.(type) {
	case *KnowledgeBase:
		s := c.cur.Load()
		return source{lexical: s.index, snap: s}
	case corpus:
		return source{lexical: h.cfg.Lexical, corpus: c, version: c.Version()}
	}
	return source{lexical: h.cfg.Lexical}
}

// pool returns the documents vector search ranks, their version and whether
// they are a whole corpus; outside a corpus they are the lexical hits lex.
// It returns errVersionChanged when a corpus changed version after src was
// taken, since lex may then come from another version.
func (src source) pool(lex []Doc) (docs []Doc, version uint64, isCorpus bool, err error) {
	switch {
	case src.snap != nil:
		return src.snap.docs, src.snap.version, true, nil
	case src.corpus != nil:
		docs = src.corpus.Docs()
		if src.corpus.Version() != src.version {
			return nil, 0, false, errVersionChanged
		}
		return docs, src.version, true, nil
	}
	return lex, 0, false, nil
}

// embedQuery embeds the question.
func (h *Hybrid) embedQuery(ctx context.Context, query string) ([]float32, error) {
	vs, err := h.cfg.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("retrieval: embedding the question: %w", err)
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return nil, errors.New("retrieval: embedding the question: empty result")
	}
	return vs[0], nil
}

func (h *Hybrid) blend(ctx context.Context, src source, qv []float32, lex []Doc, n, k int) ([]Doc, error) {
	for _, f := range qv {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, errNotFinite
		}
	}
	pool, version, isCorpus, err := src.pool(lex)
	if err != nil {
		return nil, err
	}
	dv, err := h.vectors(ctx, pool, version, isCorpus)
	if err != nil {
		return nil, err
	}
	type cand struct {
		doc      Doc
		lex, cos float64
	}
	cands := make(map[string]*cand, len(lex)+n)
	var order []*cand
	maxLex := 0.0
	for _, d := range lex {
		maxLex = max(maxLex, d.Score)
	}
	for _, d := range lex {
		c := &cand{doc: d}
		if maxLex > 0 {
			c.lex = d.Score / maxLex
		}
		cands[d.ID] = c
		order = append(order, c)
	}
	cos := make([]float64, len(pool))
	idx := make([]int, len(pool))
	for i := range pool {
		if len(dv[i]) != len(qv) {
			return nil, errDimension
		}
		cos[i] = max(cosine(qv, dv[i]), 0)
		idx[i] = i
	}
	for _, i := range topK(idx, n, func(i int) float64 { return cos[i] }, func(i int) string { return pool[i].ID }) {
		if cos[i] < h.cfg.MinSimilarity {
			break // best first: the rest are further still
		}
		if _, ok := cands[pool[i].ID]; !ok {
			c := &cand{doc: cloneDoc(pool[i])}
			cands[pool[i].ID] = c
			order = append(order, c)
		}
	}
	for i, d := range pool {
		if c, ok := cands[d.ID]; ok {
			c.cos = cos[i]
		}
	}
	w := h.cfg.Weight
	score := func(c *cand) float64 { return (1-w)*c.lex + w*c.cos }
	best := topK(order, k, score, func(c *cand) string { return c.doc.ID })
	out := make([]Doc, len(best))
	for i, c := range best {
		out[i] = c.doc
		out[i].Score = score(c)
	}
	return out, nil
}

// vectors returns the embeddings of docs, embedding those not cached yet.
// For a corpus, docs is the whole document set of version.
func (h *Hybrid) vectors(ctx context.Context, docs []Doc, version uint64, isCorpus bool) ([][]float32, error) {
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.sem }()
	if isCorpus && h.cur != nil && version == h.version && len(h.cur) == len(docs) {
		return h.cur, nil
	}

	keys := make([]uint64, len(docs))
	// out is filled as vectors are found or embedded: clearing the cache of
	// a non-corpus below must not lose the vectors of this call.
	out := make([][]float32, len(docs))
	var missing []int
	for i, d := range docs {
		keys[i] = h.key(d)
		if v, ok := h.vecs[keys[i]]; ok {
			out[i] = v
		} else {
			missing = append(missing, i)
		}
	}
	for start := 0; start < len(missing); start += h.cfg.BatchSize {
		batch := missing[start:min(start+h.cfg.BatchSize, len(missing))]
		texts := make([]string, len(batch))
		for j, i := range batch {
			texts[j] = truncate(docs[i].Title+"\n"+docs[i].Text, h.cfg.MaxTextBytes)
		}
		vs, err := h.cfg.Embedder.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("retrieval: embedding documents: %w", err)
		}
		if len(vs) != len(texts) {
			return nil, fmt.Errorf("retrieval: embedding documents: got %d vectors for %d texts", len(vs), len(texts))
		}
		if !isCorpus && len(h.vecs)+len(vs) > maxCachedVectors {
			clear(h.vecs)
		}
		for j, i := range batch {
			h.vecs[keys[i]] = vs[j]
			out[i] = vs[j]
		}
	}
	if isCorpus { // keep only this version's vectors
		keep := make(map[uint64][]float32, len(keys))
		for i, k := range keys {
			keep[k] = out[i]
		}
		h.vecs, h.version, h.cur = keep, version, out
	}
	return out, nil
}

// key identifies a document's embedded content.
func (h *Hybrid) key(d Doc) uint64 {
	var mh maphash.Hash
	mh.SetSeed(h.seed)
	mh.WriteString(d.Title)
	mh.WriteByte(0)
	mh.WriteString(d.Text)
	return mh.Sum64()
}

// cosine returns the cosine similarity of a and b, or 0 when either is zero
// or has a NaN or infinite component: NaN is never below MinSimilarity, so
// it would let any document in.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	if c := dot / math.Sqrt(na*nb); !math.IsNaN(c) {
		return c
	}
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 { // inside a UTF-8 sequence
		n--
	}
	return s[:n]
}

func trim(docs []Doc, k int) []Doc {
	if len(docs) > k {
		return docs[:k]
	}
	return docs
}
