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

// Index is an in-memory BM25 index over a fixed set of documents. Title and
// tags weigh more than the body. It is immutable once built and safe for
// concurrent use; rebuild it to change the documents.
type Index struct {
	docs     []Doc
	terms    map[string]int32 // term -> index into postings
	postings [][]posting
	docLen   []float32 // terms per document (title + tags + body)
	avgLen   float64
	scratch  sync.Pool // *[]float64 of len(docs): per-query score accumulators
}

type posting struct {
	doc int32
	tf  float32 // weighted term frequency
}

var _ Retriever = (*Index)(nil)

// NewIndex builds an index over docs. The index keeps its own copy of the
// slice; stored scores are ignored.
func NewIndex(docs []Doc) *Index {
	ix := &Index{
		docs:   cloneDocs(docs),
		terms:  make(map[string]int32),
		docLen: make([]float32, len(docs)),
	}
	var (
		tf      []float32 // term id -> weighted frequency in the current document
		touched []int32   // term ids with tf > 0, in first-seen order
		total   float64
	)
	for d := range ix.docs {
		n := 0
		add := func(text string, w float32) {
			eachToken(text, func(t string) {
				id, ok := ix.terms[t]
				if !ok {
					id = int32(len(ix.postings))
					ix.terms[strings.Clone(t)] = id
					ix.postings = append(ix.postings, nil)
					tf = append(tf, 0)
				}
				if tf[id] == 0 {
					touched = append(touched, id)
				}
				tf[id] += w
				n++
			})
		}
		add(ix.docs[d].Title, titleWeight)
		for _, tag := range ix.docs[d].Tags {
			add(tag, tagWeight)
		}
		add(ix.docs[d].Text, 1)
		for _, id := range touched {
			ix.postings[id] = append(ix.postings[id], posting{doc: int32(d), tf: tf[id]})
			tf[id] = 0
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
		s := make([]float64, len(ix.docs))
		return &s
	}
	return ix
}

// Len returns the number of indexed documents.
func (ix *Index) Len() int { return len(ix.docs) }

// Retrieve returns up to k documents matching query, best first, as copies
// with Score set to their BM25 score. Ties are broken by ID. A k <= 0 or a
// query without terms gives no documents and no error; a done ctx gives
// ctx.Err().
func (ix *Index) Retrieve(ctx context.Context, query string, k int) ([]Doc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k <= 0 || len(ix.docs) == 0 {
		return nil, nil
	}
	terms, weights := queryTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	sp := ix.scratch.Get().(*[]float64)
	defer ix.scratch.Put(sp)
	scores := *sp
	var touched []int32
	n := float64(len(ix.docs))
	for i, t := range terms {
		if i%16 == 15 {
			if err := ctx.Err(); err != nil {
				for _, d := range touched {
					scores[d] = 0
				}
				return nil, err
			}
		}
		p, ok := ix.terms[t]
		if !ok || weights[i] <= 0 {
			continue
		}
		list := ix.postings[p]
		df := float64(len(list))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		w := weights[i] * idf
		for _, ps := range list {
			tf := float64(ps.tf)
			norm := bm25K1 * (1 - bm25B + bm25B*float64(ix.docLen[ps.doc])/ix.avgLen)
			if scores[ps.doc] == 0 {
				touched = append(touched, ps.doc)
			}
			scores[ps.doc] += w * tf * (bm25K1 + 1) / (tf + norm)
		}
	}
	best := topK(touched, k, func(d int32) float64 { return scores[d] }, func(d int32) string { return ix.docs[d].ID })
	out := make([]Doc, len(best))
	for i, d := range best {
		out[i] = cloneDoc(ix.docs[d])
		out[i].Score = scores[d]
	}
	for _, d := range touched {
		scores[d] = 0
	}
	return out, nil
}

// queryTerms returns the distinct terms of query in first-seen order (so
// scores add up in the same order every time) with their weights: the
// number of occurrences, plus synonyms of the terms at synonymWeight.
func queryTerms(query string) ([]string, []float64) {
	all := tokens(query)
	var terms []string
	var weights []float64
	seen := make(map[string]int, len(all))
	add := func(t string, w float64) {
		if i, ok := seen[t]; ok {
			weights[i] += w
			return
		}
		seen[t] = len(terms)
		terms = append(terms, t)
		weights = append(weights, w)
	}
	for _, t := range all {
		add(t, 1)
	}
	for _, t := range all {
		for _, s := range synonyms[t] {
			if _, ok := seen[s]; !ok {
				add(s, synonymWeight)
			}
		}
	}
	return terms, weights
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
