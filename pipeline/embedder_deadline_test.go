package pipeline

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/tiers"
)

// hangingEmbedder waits for its context, as a hung embedding service would.
type hangingEmbedder struct{ calls atomic.Int64 }

func (h *hangingEmbedder) Embed(ctx context.Context, _ []string) ([][]float32, error) {
	h.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCallerDeadlineIgnoredByEmbedderBreaker: an embedding cut short
// because the caller's own deadline passed is the caller going away, as
// for a chat model call: the embedding model's breaker does not count it
// (and so does not open for every other question).
func TestCallerDeadlineIgnoredByEmbedderBreaker(t *testing.T) {
	emb := &hangingEmbedder{}
	p, _ := newTestPipeline(t, Options{
		RequestTimeout: time.Minute,
		Embedder:       emb,
		EmbedderModel:  "embed",
		Tiers: []Stage{
			{Tier: tiers.NewSemanticCache(tiers.SemanticCacheConfig{Name: "cache", Cache: cache.New(cache.Config{}), Embedder: emb}),
				Breaker: breaker.Config{FailureThreshold: 100}},
			{Tier: tiers.NewStatic("static", "sorry")},
		},
	})
	for range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		_, _ = p.Ask(ctx, tiers.Query{Tenant: "acme", Question: "how do refunds work"})
		cancel()
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	b, ok := p.Breakers().Lookup("model/embed")
	if !ok {
		t.Fatal("no model/embed breaker")
	}
	if s := b.Snapshot(); s.Calls != 0 || b.State() != breaker.StateClosed {
		t.Fatalf("embeddings cut short by the caller's deadline were counted: %d failures of %d calls, state %v (embedder calls %d)",
			s.Failures, s.Calls, b.State(), emb.calls.Load())
	}
}
