package retrieval

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
)

// BM25 parameters and field weights of Index.
var (
	bm25K1 = 1.2
	bm25B  = 0.75

	titleWeight float32 = 3 // a title occurrence counts as this many body occurrences
	tagWeight   float32 = 1 // likewise for a tag
)

// DefaultMinCoverage is the IndexConfig.MinCoverage used when the field is
// zero.
const DefaultMinCoverage = 0.14

// IndexConfig configures an Index. Zero fields take the defaults given.
type IndexConfig struct {
	// MinCoverage is the relevance floor: the share of the question's
	// content that a document must cover to be returned, so that a
	// question the documents do not cover gets none rather than articles
	// sharing one common word. The content is each English word and each
	// Chinese character of the question outside the stop words, weighted
	// by its IDF (a word no document has weighs the most). A document
	// covers a word it contains (or a synonym of it), and a Chinese
	// character through a two-character term of the question containing
	// it; a cover counts in full from the title or tags and at 0.3 from
	// the body or a lone character. Default DefaultMinCoverage; a negative
	// value returns every document that matches any term.
	MinCoverage float64
}

// minCoverage returns the floor in effect for cfg.
func (cfg IndexConfig) minCoverage() float64 {
	switch {
	case cfg.MinCoverage == 0 || math.IsNaN(cfg.MinCoverage):
		return DefaultMinCoverage
	case cfg.MinCoverage < 0:
		return 0
	}
	return cfg.MinCoverage
}

// Index is an in-memory BM25 index over a fixed set of documents. Title and
// tags weigh more than the body. It is immutable once built and safe for
// concurrent use; rebuild it to change the documents.
type Index struct {
	cfg      IndexConfig
	docs     []Doc
	terms    map[string]int32 // term -> index into postings
	postings [][]posting
	docLen   []float32 // terms per document (title + tags + body)
	avgLen   float64
	scratch  sync.Pool // *accumulators of len(docs), all zero between queries
}

type posting struct {
	doc  int32
	tf   float32 // weighted term frequency
	head bool    // the term is in the document's title or tags
}

var _ Retriever = (*Index)(nil)

// NewIndex builds an index over docs with the default IndexConfig. The
// index keeps its own copy of the slice; stored scores are ignored.
func NewIndex(docs []Doc) *Index {
	return NewIndexConfig(docs, IndexConfig{})
}

// NewIndexConfig builds an index over docs configured by cfg; see NewIndex.
func NewIndexConfig(docs []Doc, cfg IndexConfig) *Index {
	ix := &Index{
		cfg:    cfg,
		docs:   cloneDocs(docs),
		terms:  make(map[string]int32),
		docLen: make([]float32, len(docs)),
	}
	var (
		tf      []float32 // term id -> weighted frequency in the current document
		head    []bool    // term id -> in the current document's title or tags
		touched []int32   // term ids with tf > 0, in first-seen order
		total   float64
	)
	for d := range ix.docs {
		n := 0
		inHead := true
		add := func(text string, w float32) {
			eachToken(text, func(t string) {
				id, ok := ix.terms[t]
				if !ok {
					id = int32(len(ix.postings))
					ix.terms[strings.Clone(t)] = id
					ix.postings = append(ix.postings, nil)
					tf = append(tf, 0)
					head = append(head, false)
				}
				if tf[id] == 0 {
					touched = append(touched, id)
				}
				tf[id] += w
				head[id] = head[id] || inHead
				n++
			})
		}
		add(ix.docs[d].Title, titleWeight)
		for _, tag := range ix.docs[d].Tags {
			add(tag, tagWeight)
		}
		inHead = false
		add(ix.docs[d].Text, 1)
		for _, id := range touched {
			ix.postings[id] = append(ix.postings[id], posting{doc: int32(d), tf: tf[id], head: head[id]})
			tf[id], head[id] = 0, false
		}
		touched = touched[:0]
		ix.docLen[d] = float32(n)
		total += float64(n)
	}
	if len(docs) > 0 {
		ix.avgLen = total / float64(len(docs))
	}
	if ix.avgLen == 0 {
		ix.avgLen = 1
	}
	ix.scratch.New = func() any {
		n := len(ix.docs)
		return &accumulators{score: make([]float64, n), covered: make([]uint64, n), headCovered: make([]uint64, n)}
	}
	return ix
}

// Len returns the number of indexed documents.
func (ix *Index) Len() int { return len(ix.docs) }

// Retrieve returns up to k documents matching query, best first, as copies
// with Score set to their BM25 score. Ties are broken by ID. Only
// documents that match at least IndexConfig.MinCoverage of the query's
// term weight are returned, so a question the documents do not cover gets
// none. A k <= 0 or a query without terms gives no documents and no
// error; a done ctx gives ctx.Err().
func (ix *Index) Retrieve(ctx context.Context, query string, k int) ([]Doc, error) {
	return ix.retrieve(ctx, query, k, ix.cfg.minCoverage())
}

// retrieve is Retrieve with the relevance floor minCov in [0, 1].
func (ix *Index) retrieve(ctx context.Context, query string, k int, minCov float64) ([]Doc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k <= 0 || len(ix.docs) == 0 {
		return nil, nil
	}
	return ix.search(ctx, parseQuery(query), k, minCov)
}

// search ranks the documents for the parsed query q; see retrieve.
func (ix *Index) search(ctx context.Context, q query, k int, minCov float64) ([]Doc, error) {
	if len(q.terms) == 0 {
		return nil, nil
	}
	acc := ix.scratch.Get().(*accumulators)
	defer ix.scratch.Put(acc)
	scores, covered, headCovered := acc.score, acc.covered, acc.headCovered
	var touched []int32
	reset := func() {
		for _, d := range touched {
			scores[d], covered[d], headCovered[d] = 0, 0, 0
		}
	}
	for i, t := range q.terms {
		if i%16 == 15 {
			if err := ctx.Err(); err != nil {
				reset()
				return nil, err
			}
		}
		list := ix.postingsOf(t)
		w := q.weights[i] * ix.idf(len(list))
		for _, ps := range list {
			tf := float64(ps.tf)
			norm := bm25K1 * (1 - bm25B + bm25B*float64(ix.docLen[ps.doc])/ix.avgLen)
			if scores[ps.doc] == 0 {
				touched = append(touched, ps.doc)
			}
			scores[ps.doc] += w * tf * (bm25K1 + 1) / (tf + norm)
			covered[ps.doc] |= q.covers[i]
			if ps.head && !q.weak[i] {
				headCovered[ps.doc] |= q.covers[i]
			}
		}
	}
	candidates := ix.relevant(q, touched, acc, minCov)
	best := topK(candidates, k, func(d int32) float64 { return scores[d] }, func(d int32) string { return ix.docs[d].ID })
	out := make([]Doc, len(best))
	for i, d := range best {
		out[i] = cloneDoc(ix.docs[d])
		out[i].Score = scores[d]
	}
	reset()
	return out, nil
}

// postingsOf returns the postings of term t, nil if no document has it.
func (ix *Index) postingsOf(t string) []posting {
	if p, ok := ix.terms[t]; ok {
		return ix.postings[p]
	}
	return nil
}

// idf returns the inverse document frequency of a term found in df
// documents; a term no document has gets the highest.
func (ix *Index) idf(df int) float64 {
	n := float64(len(ix.docs))
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

// topK returns the k best of items by score, highest first, ties broken
// by ascending id. It keeps a bounded min-heap, so it costs O(n log k).
func topK[T any](items []T, k int, score func(T) float64, id func(T) string) []T {
	worse := func(a, b T) bool { // a ranks below b
		sa, sb := score(a), score(b)
		if sa != sb {
			return sa < sb
		}
		return id(a) > id(b)
	}
	h := make([]T, 0, min(k, len(items)))
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && worse(h[r], h[l]) {
				m = r
			}
			if !worse(h[m], h[i]) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for _, it := range items {
		if len(h) < k {
			h = append(h, it)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !worse(h[i], h[p]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
			continue
		}
		if worse(h[0], it) {
			h[0] = it
			down(0)
		}
	}
	slices.SortFunc(h, func(a, b T) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return 0
	})
	return h
}

func cloneDoc(d Doc) Doc {
	d.Tags = slices.Clone(d.Tags)
	return d
}

func cloneDocs(docs []Doc) []Doc {
	out := make([]Doc, len(docs))
	for i, d := range docs {
		out[i] = cloneDoc(d)
		out[i].Score = 0
	}
	return out
}
