package tiers

import (
	"context"
	"errors"
	"sync/atomic"
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

// slowRetriever answers testDocs after delay, or fails when its context
// ends first, counting the calls.
type slowRetriever struct {
	delay time.Duration
	calls atomic.Int32
}

func (s *slowRetriever) Retrieve(ctx context.Context, _ string, k int) ([]retrieval.Doc, error) {
	s.calls.Add(1)
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return testDocs[:min(k, len(testDocs))], nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestMemoDocsCutWithTheTierIsNotRemembered guards a question from the
// first tier's short time: without a retrieval time limit of its own, a
// retrieval cut short because the asking tier's time ran out is not
// remembered as a failure, and a later tier retrieves within its own time.
func TestMemoDocsCutWithTheTierIsNotRemembered(t *testing.T) {
	ret := &slowRetriever{delay: 50 * time.Millisecond}
	m := &Memo{K: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := m.Docs(ctx, ret, Query{Question: "returns"}, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Docs past the tier's time: %v, want its deadline", err)
	}
	docs, err := m.Docs(context.Background(), ret, Query{Question: "returns"}, 3)
	if err != nil || len(docs) != 3 {
		t.Fatalf("Docs for the next tier: %v, %v; want the documents", docs, err)
	}
	if m.retrievalFailed() || ret.calls.Load() != 2 {
		t.Fatalf("failed %v after %d calls, want a retrieval that worked, asked twice", m.retrievalFailed(), ret.calls.Load())
	}
}

// TestMemoDocsOutliveTheAskingTier: with RetrievalTimeout, the retrieval
// runs under that limit alone: a tier whose time runs out stops waiting,
// the retrieval goes on, and the next tier gets its documents without a
// second retrieval. A retrieval over its own limit is remembered failed.
func TestMemoDocsOutliveTheAskingTier(t *testing.T) {
	ret := &slowRetriever{delay: 60 * time.Millisecond}
	m := &Memo{K: 3, RetrievalTimeout: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := m.Docs(ctx, ret, Query{Question: "returns"}, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Docs past the tier's time: %v, want its deadline", err)
	}
	if waited := time.Since(start); waited > 50*time.Millisecond {
		t.Fatalf("the tier waited %v, past its own time", waited)
	}
	docs, err := m.Docs(context.Background(), ret, Query{Question: "returns"}, 2)
	if err != nil || len(docs) != 2 || ret.calls.Load() != 1 {
		t.Fatalf("Docs for the next tier: %v, %v after %d calls; want two documents, one retrieval", docs, err, ret.calls.Load())
	}
	if w := m.Waited(); w < 50*time.Millisecond {
		t.Errorf("Waited = %v, want the time both tiers waited", w)
	}

	slow := &slowRetriever{delay: time.Hour}
	m = &Memo{RetrievalTimeout: 20 * time.Millisecond}
	if _, err := m.Docs(context.Background(), slow, Query{Question: "returns"}, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Docs past the retrieval's own limit: %v", err)
	}
	if _, err := m.Docs(context.Background(), slow, Query{Question: "returns"}, 3); err == nil || slow.calls.Load() != 1 || !m.retrievalFailed() {
		t.Fatalf("after the retrieval's own timeout: %v, %d calls; want the failure remembered", err, slow.calls.Load())
	}
}
