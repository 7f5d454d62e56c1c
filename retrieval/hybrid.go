package retrieval

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/clock"
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
	// Weight is the share of the vector score in the blended score, in
	// (0, 1]; the rest is the normalized lexical score. Default 0.5; values
	// outside the range are clamped.
	Weight float64
	// Candidates is how many lexical and how many vector hits are blended
	// for a request of k documents: max(Candidates, 3k). Default 20.
	Candidates int
	// BatchSize is how many documents go to the Embedder per call.
	// Default 32.
	BatchSize int
	// Concurrency is how many batches of a corpus are embedded at once in
	// the background. Default 2.
	Concurrency int
	// BatchTimeout bounds one background embedding call. Default 30s.
	BatchTimeout time.Duration
	// RetryDelay is how long after a failed background embedding a
	// question may start another. Default 30s.
	RetryDelay time.Duration
	// MaxTextBytes truncates a document (title and text) before it is
	// embedded, on a UTF-8 boundary. Default 2000.
	MaxTextBytes int
	// MinRelevance is how far a document's similarity to the question
	// must stand above the question's mean similarity to the corpus, in
	// standard deviations of that similarity, for the document to enter
	// the results through vector search alone (sharing no word with the
	// question). It keeps a question the knowledge base does not cover
	// from being answered with unrelated articles under any embedder,
	// whatever the scale of its similarities. Default DefaultMinRelevance;
	// a negative value admits every vector hit.
	MinRelevance float64
	// MinSimilarity, if positive, is a cosine similarity a vector-only hit
	// needs as well. Default none.
	MinSimilarity float64
	// Clock reads the time for RetryDelay. Default clock.System.
	Clock clock.Clock
	// Logger receives the progress of background embedding; nil means
	// slog.Default().
	Logger *slog.Logger
	// OnFallback, if set, is called with the error each time a question is
	// answered by the lexical score alone because embedding the question
	// failed, and each time background embedding of the documents fails.
	// It is called without locks held and must be safe for concurrent use.
	OnFallback func(err error)
}

// Hybrid blends BM25 with the similarity of embeddings. Over a corpus, the
// document vectors are computed in the background (see StartVectors) and
// kept until the documents change; until the vectors of the corpus's
// current version are ready, questions are ranked by the lexical score
// alone, so embedding the corpus never takes a question's time. When the
// embedder fails, Hybrid answers from the lexical retriever alone, so a
// sick embedding service never fails a question. A Hybrid is safe for
// concurrent use; Close stops its background work.
type Hybrid struct {
	cfg  HybridConfig
	seed maphash.Seed

	emb   atomic.Pointer[embedderRef] // the embedder in use: cfg.Embedder or UseEmbedder's
	ready atomic.Pointer[vectorSet]   // the newest complete corpus vectors
	bg    context.Context             // parent of background jobs, cancelled by Close
	stop  context.CancelFunc
	wg    sync.WaitGroup // background jobs
	mu    sync.Mutex     // guards state
	state corpusState

	// sem (capacity 1) serializes embedding of the candidates of a
	// Retriever that is not a corpus and guards vecs: a ctx-aware mutex,
	// so a waiting question can give up.
	sem  chan struct{}
	vecs map[uint64][]float32 // document content hash -> vector
}

var _ VectorRetriever = (*Hybrid)(nil)

// corpus is a Retriever whose whole document set can be listed.
type corpus interface {
	Docs() []Doc
	Version() uint64
}

var (
	// errDimension reports vectors of different lengths.
	errDimension = errors.New("retrieval: embedding dimensions differ")
	// errNotFinite reports a question vector with a NaN or infinite component.
	errNotFinite = errors.New("retrieval: the question's embedding is not finite")
	// errVersionChanged reports that a corpus changed version during a question.
	errVersionChanged = errors.New("retrieval: the documents changed during the question")
	// errClosed reports a wait on a closed Hybrid.
	errClosed = errors.New("retrieval: hybrid retriever closed")
	// errNoEmbedder reports documents to embed with no embedder in use.
	errNoEmbedder = errors.New("retrieval: no embedder")
)

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
	if cfg.MinRelevance == 0 || math.IsNaN(cfg.MinRelevance) {
		cfg.MinRelevance = DefaultMinRelevance
	}
	setDefault(&cfg.Candidates, 20)
	setDefault(&cfg.BatchSize, 32)
	setDefault(&cfg.Concurrency, 2)
	setDefault(&cfg.MaxTextBytes, 2000)
	setDefault(&cfg.BatchTimeout, 30*time.Second)
	setDefault(&cfg.RetryDelay, 30*time.Second)
	if cfg.Clock == nil {
		cfg.Clock = clock.System
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Hybrid{
		cfg:   cfg,
		seed:  maphash.MakeSeed(),
		sem:   make(chan struct{}, 1),
		vecs:  make(map[uint64][]float32),
		state: corpusState{changed: make(chan struct{})},
	}
	h.bg, h.stop = context.WithCancel(context.Background())
	h.UseEmbedder(cfg.Embedder)
	return h
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Retrieve embeds query and returns the k best documents by blended score;
// see RetrieveVector.
func (h *Hybrid) Retrieve(ctx context.Context, query string, k int) ([]Doc, error) {
	return h.RetrieveVector(ctx, query, nil, k)
}

// RetrieveVector returns the k best documents for query, best first, with
// Score set to (1-Weight)*lexical/maxLexical + Weight*share, where share
// is how far the document's similarity stands above the question's mean
// similarity to the corpus, over 4 standard deviations, clamped to [0, 1];
// ties are broken by ID. vec is the query's embedding if the caller has
// it; when nil the query is embedded here; NoVector ranks by the lexical
// score alone, as do document vectors that are not ready yet. If
// embedding the query fails, the query's vector is not finite, or the
// dimensions differ, the lexical results are returned unchanged (with
// their BM25 scores). The lexical hits and the documents vector search
// ranks come from one version of the corpus, however it reloads
// meanwhile. A done ctx gives ctx.Err(); a lexical error is returned as
// is.
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
		if err != nil || h.embedder() == nil || isNoVector(vec) || len(tokens(query)) == 0 {
			return trim(lex, k), err
		}
		pool, err := h.pool(ctx, src, lex)
		if err == nil && pool.docs == nil {
			return trim(lex, k), nil // the corpus's vectors are not ready
		}
		if err == nil && vec == nil { // embedded once, kept if the question starts again
			vec, err = h.embedQuery(ctx, query)
		}
		var out []Doc
		if err == nil {
			out, err = h.blend(pool, vec, lex, n, k)
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
// over a corpus, the version its hits come from.
type source struct {
	lexical Retriever
	corpus  corpus // a corpus other than a *KnowledgeBase, checked again later
	version uint64 // the corpus's version before the lexical search
	isKB    bool
}

func (h *Hybrid) source() source {
	switch c := h.cfg.Lexical.(type) {
	case *KnowledgeBase:
		s := c.cur.Load()
		return source{lexical: s.index, version: s.version, isKB: true}
	case corpus:
		return source{lexical: h.cfg.Lexical, corpus: c, version: c.Version()}
	}
	return source{lexical: h.cfg.Lexical}
}

func (h *Hybrid) isCorpus() bool {
	_, ok := h.cfg.Lexical.(corpus)
	return ok
}

// vectorPool is the documents vector search ranks, with their vectors.
type vectorPool struct {
	docs     []Doc
	vecs     [][]float32
	isCorpus bool // docs are a whole corpus version, not the lexical hits
}

// pool returns the documents vector search ranks for src: over a corpus,
// the ready vectors of src's version (docs nil when they are not ready,
// which starts computing them); otherwise the lexical hits lex, embedded
// here. It returns errVersionChanged when a corpus other than a
// *KnowledgeBase changed version after src was taken.
func (h *Hybrid) pool(ctx context.Context, src source, lex []Doc) (vectorPool, error) {
	if !src.isKB && src.corpus == nil {
		vecs, err := h.candidateVectors(ctx, lex)
		return vectorPool{docs: lex, vecs: vecs}, err
	}
	if src.corpus != nil && src.corpus.Version() != src.version {
		return vectorPool{}, errVersionChanged
	}
	set := h.readySet(src.version)
	if set == nil {
		return vectorPool{}, nil
	}
	return vectorPool{docs: set.docs, vecs: set.vecs, isCorpus: true}, nil
}

// blend ranks the lexical hits lex and the documents of pool that stand
// out by vector, and returns the k best.
func (h *Hybrid) blend(pool vectorPool, qv []float32, lex []Doc, n, k int) ([]Doc, error) {
	for _, f := range qv {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, errNotFinite
		}
	}
	st, err := newStanding(qv, pool.vecs)
	if err != nil {
		return nil, err
	}
	type cand struct {
		doc        Doc
		lex, share float64
	}
	cands := make(map[string]*cand, len(lex)+n)
	order := make([]*cand, 0, len(lex)+n)
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
	if pool.isCorpus {
		idx := make([]int, len(pool.docs))
		for i := range idx {
			idx[i] = i
		}
		for _, i := range topK(idx, n, func(i int) float64 { return st.cos[i] }, func(i int) string { return pool.docs[i].ID }) {
			if !h.standsOut(st, i) {
				break // best first: the rest stand out less
			}
			if _, ok := cands[pool.docs[i].ID]; !ok {
				c := &cand{doc: cloneDoc(pool.docs[i])}
				cands[c.doc.ID] = c
				order = append(order, c)
			}
		}
	}
	for i, d := range pool.docs {
		if c, ok := cands[d.ID]; ok {
			c.share = st.share(i)
		}
	}
	w := h.cfg.Weight
	score := func(c *cand) float64 { return (1-w)*c.lex + w*c.share }
	best := topK(order, k, score, func(c *cand) string { return c.doc.ID })
	out := make([]Doc, len(best))
	for i, c := range best {
		out[i] = c.doc
		out[i].Score = score(c)
	}
	return out, nil
}

// standsOut reports whether pool document i may enter the results by
// vector alone: its standing reaches MinRelevance (always, if negative)
// and its cosine MinSimilarity (if positive).
func (h *Hybrid) standsOut(st standing, i int) bool {
	if h.cfg.MinSimilarity > 0 && st.cos[i] < h.cfg.MinSimilarity {
		return false
	}
	return h.cfg.MinRelevance < 0 || st.z(i) >= h.cfg.MinRelevance
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
