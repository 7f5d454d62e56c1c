package tiers

import (
	"context"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/retrieval"
)

// hangingEmbedder blocks until its context ends, like an embedding service
// that accepts the connection and never answers.
type hangingEmbedder struct{}

func (hangingEmbedder) Embed(ctx context.Context, _ []string) ([][]float32, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestMemoDocsAfterEmbeddingHung: the first tier that needs documents
// spends its whole time limit waiting for a hung embedding service, so
// its time is up before the retriever is asked. The embedding failure is
// remembered (the dead service is not asked again), but no retrieval
// happened: a later tier must still get the documents, ranked lexically.
// The retrieval tier keeps working when every model service is down.
func TestMemoDocsAfterEmbeddingHung(t *testing.T) {
	ret := retrieval.NewHybrid(retrieval.HybridConfig{Lexical: retrieval.NewIndex(testDocs), Embedder: hangingEmbedder{}})
	m := &Memo{K: 5, Embedder: hangingEmbedder{}}
	q := Query{Question: "what is the returns policy", Memo: m}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := m.Docs(ctx, ret, q, 5); err == nil {
		t.Fatal("Docs with the embedding hung: no error")
	}

	start := time.Now()
	a, err := NewRetrieval(RetrievalConfig{Retriever: ret}).Answer(context.Background(), q)
	if err != nil {
		t.Fatalf("retrieval tier after the embedding hung: %v", err)
	}
	if len(a.Docs) == 0 || a.Docs[0].ID != "returns" {
		t.Errorf("docs = %+v, want the returns policy first", a.Docs)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the retrieval tier waited %v: the hung embedding service was asked again", d)
	}
}
