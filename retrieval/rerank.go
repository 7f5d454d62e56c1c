package retrieval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Reranker scores documents by their relevance to a query, as a rerank
// model does: higher is more relevant. It returns a score for some or all
// of the documents, by their index in docs. Implementations must be safe
// for concurrent use.
type Reranker interface {
	Rerank(ctx context.Context, query string, docs []string) ([]RerankScore, error)
}

// RerankScore is a reranker's score for the document at Index of its input.
type RerankScore struct {
	Index int     `json:"index"`
	Score float64 `json:"relevance_score"`
}

// ErrBadRerank reports reranker scores that cannot be applied: an index
// out of range or given twice, or a score that is not a finite number.
var ErrBadRerank = errors.New("retrieval: bad rerank result")

// DefaultRerankTextBytes is the rerank text size of RerankDocs when
// maxTextBytes is 0.
const DefaultRerankTextBytes = 2000

// RerankDocs asks r to score docs for query and returns them best first by
// its scores (ties keep their order), with Score set to the reranker's;
// documents it scores below minScore, or does not score, are dropped. A
// document is sent as its title and text, truncated to maxTextBytes on a
// UTF-8 boundary (DefaultRerankTextBytes if 0). An error of r is returned
// as is, scores that cannot be applied as ErrBadRerank; either way the
// caller keeps its own order (the no-op rerank).
func RerankDocs(ctx context.Context, r Reranker, query string, docs []Doc, minScore float64, maxTextBytes int) ([]Doc, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	if maxTextBytes <= 0 {
		maxTextBytes = DefaultRerankTextBytes
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = truncate(d.Title+"\n"+d.Text, maxTextBytes)
	}
	scores, err := r.Rerank(ctx, query, texts)
	if err != nil {
		return nil, err
	}
	seen := make([]bool, len(docs))
	for _, s := range scores {
		if s.Index < 0 || s.Index >= len(docs) || seen[s.Index] {
			return nil, fmt.Errorf("%w: index %d for %d documents", ErrBadRerank, s.Index, len(docs))
		}
		if math.IsNaN(s.Score) || math.IsInf(s.Score, 0) {
			return nil, fmt.Errorf("%w: score %v", ErrBadRerank, s.Score)
		}
		seen[s.Index] = true
	}
	sorted := slices.Clone(scores)
	slices.SortStableFunc(sorted, func(a, b RerankScore) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Index, b.Index)
	})
	out := make([]Doc, 0, len(sorted))
	for _, s := range sorted {
		if s.Score < minScore {
			break
		}
		d := cloneDoc(docs[s.Index])
		d.Score = s.Score
		out = append(out, d)
	}
	return out, nil
}
