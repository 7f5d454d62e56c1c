package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/tiers"
)

// TestRememberKeepsToTheBudget: writing an answer back to the semantic
// cache is part of the question and keeps to its budget. Here the cache
// tier was skipped (its breaker is open), so the write-back is the first
// to embed the question, and the embedding service hangs: Ask must still
// return within the request timeout.
func TestRememberKeepsToTheBudget(t *testing.T) {
	emb := &hangingEmbedder{}
	p, _ := newTestPipeline(t, Options{
		RequestTimeout: 300 * time.Millisecond,
		Embedder:       emb,
		EmbedderModel:  "embed",
		Tiers: []Stage{
			{Tier: tiers.NewSemanticCache(tiers.SemanticCacheConfig{Name: "cache", Cache: cache.New(cache.Config{}), Embedder: emb}),
				Timeout: 20 * time.Millisecond, Breaker: breaker.Config{FailureThreshold: 1, OpenDuration: time.Minute}},
			{Tier: tier("primary", tiers.SourcePrimary, answers("ok")), Model: true},
		},
	})
	ask(t, p, "first") // the embedding times out in the cache tier: tier/cache opens
	if b, _ := p.Breakers().Lookup("tier/cache"); b.State() != breaker.StateOpen {
		t.Fatalf("tier/cache = %v, want open", b.State())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		res  *Result
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		res, err = p.Ask(ctx, tiers.Query{Tenant: "acme", Question: "second"})
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		cancel()
		<-done
		t.Fatal("Ask did not return within 3s with a request timeout of 300ms: the cache write-back waited on the hung embedder")
	}
	if err != nil || res.Source != tiers.SourcePrimary {
		t.Fatalf("Ask = %v, %v; want the primary's answer", res, err)
	}
}
