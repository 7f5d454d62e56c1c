package retrieval_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ragfuse/ragfuse/retrieval"
)

// listRetriever returns its documents, as many as asked for, with
// decreasing scores; it is not a corpus.
type listRetriever struct{ docs []retrieval.Doc }

func (l *listRetriever) Retrieve(_ context.Context, _ string, k int) ([]retrieval.Doc, error) {
	out := make([]retrieval.Doc, 0, min(k, len(l.docs)))
	for i, d := range l.docs[:min(k, len(l.docs))] {
		d.Score = float64(len(l.docs) - i)
		out = append(out, d)
	}
	return out, nil
}

// TestHybridVectorCacheFullStillBlends: over a plain Retriever, the vector
// cache is cleared when it fills up; a question whose candidates are partly
// cached and partly new must still be blended, not fall back to the
// lexical score because the cached half vanished with the clear.
func TestHybridVectorCacheFullStillBlends(t *testing.T) {
	docs := func(prefix string, n int) []retrieval.Doc {
		out := make([]retrieval.Doc, n)
		for i := range out {
			out[i] = retrieval.Doc{ID: fmt.Sprintf("%s%05d", prefix, i), Title: "Refund " + prefix, Text: fmt.Sprintf("refund text %s %d", prefix, i)}
		}
		return out
	}
	old := docs("old", 9995)
	lex := &listRetriever{docs: old}
	var fallbacks []error
	h := retrieval.NewHybrid(retrieval.HybridConfig{
		Lexical:    lex,
		Embedder:   newHybridEmbedder(),
		OnFallback: func(err error) { fallbacks = append(fallbacks, err) },
	})
	ctx := context.Background()
	if _, err := h.Retrieve(ctx, "refund", len(old)/3+1); err != nil {
		t.Fatal(err)
	}
	if len(fallbacks) > 0 {
		t.Fatalf("filling the cache fell back: %v", fallbacks)
	}
	// Ten cached documents and ten new ones.
	lex.docs = append(append([]retrieval.Doc(nil), old[:10]...), docs("new", 10)...)
	if _, err := h.Retrieve(ctx, "refund", 3); err != nil {
		t.Fatal(err)
	}
	if len(fallbacks) > 0 {
		t.Fatalf("fell back to lexical: %v", fallbacks)
	}
}
