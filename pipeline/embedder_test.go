package pipeline

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/tiers"
	openai "github.com/sashabaranov/go-openai"
)

// failingEmbedder counts its calls and fails while err is set.
type failingEmbedder struct {
	calls atomic.Int64
	fail  atomic.Bool
}

func (f *failingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	f.calls.Add(1)
	if f.fail.Load() {
		return nil, errors.New("embedding service: 503")
	}
	return cache.NewHashEmbedder(0).Embed(context.Background(), texts)
}

// TestEmbedderGuardedByBreaker guards the rule that an embedding service
// is a model call like any other: once it has failed failure_threshold
// times, its breaker opens and questions skip embedding at once (the
// cache misses) while the model tier still answers; after the open
// duration one probe reaches it again.
func TestEmbedderGuardedByBreaker(t *testing.T) {
	emb := &failingEmbedder{}
	emb.fail.Store(true)
	c := cache.New(cache.Config{})
	p, clk := newTestPipeline(t, Options{
		Embedder:      emb,
		EmbedderModel: "embed",
		Tiers: []Stage{
			{Tier: tiers.NewCache(tiers.CacheConfig{Name: "cache", Cache: c, Embedder: emb}),
				Breaker: breaker.Config{FailureThreshold: 50, OpenDuration: time.Minute}},
			{Tier: tier("primary", tiers.SourcePrimary, answers("ok")), Model: true},
		},
	})
	for i, want := range []int64{1, 2, 2, 2} {
		res := ask(t, p, "how do refunds work")
		if res.Source != tiers.SourcePrimary {
			t.Fatalf("question %d answered by %s, want primary", i, res.Source)
		}
		if got := emb.calls.Load(); got != want {
			t.Fatalf("after question %d the embedder had %d calls, want %d", i, got, want)
		}
	}
	b, ok := p.Breakers().Lookup("model/embed")
	if !ok || b.State() != breaker.StateOpen {
		t.Fatalf("model/embed breaker missing or not open")
	}
	emb.fail.Store(false)
	clk.Advance(time.Minute + time.Second)
	ask(t, p, "how do refunds work")
	if got := emb.calls.Load(); got != 3 {
		t.Fatalf("after the open duration the embedder had %d calls, want 3 (one probe)", got)
	}
	if b.State() != breaker.StateClosed {
		t.Errorf("model/embed = %v after a good probe, want closed", b.State())
	}
}

// rateLimitedEmbedder answers 429 without Retry-After and counts calls.
type rateLimitedEmbedder struct{ calls atomic.Int64 }

func (r *rateLimitedEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	r.calls.Add(1)
	return nil, &openai.APIError{HTTPStatusCode: 429, Message: "slow down"}
}

// TestEmbedderCooldownFromModel guards the embedding model's own cooldown
// (models.<id>.cooldown): after a 429 without Retry-After it is skipped
// for that long, without its breaker hearing a failure.
func TestEmbedderCooldownFromModel(t *testing.T) {
	emb := &rateLimitedEmbedder{}
	p, clk := newTestPipeline(t, Options{
		Embedder:         emb,
		EmbedderModel:    "embed",
		EmbedderCooldown: 5 * time.Second,
		Tiers: []Stage{
			{Tier: tiers.NewCache(tiers.CacheConfig{Name: "cache", Cache: cache.New(cache.Config{}), Embedder: emb}),
				Breaker: breaker.Config{FailureThreshold: -1, FailureRate: -1}},
			{Tier: tier("primary", tiers.SourcePrimary, answers("ok")), Model: true},
		},
	})
	ask(t, p, "how do refunds work")
	clk.Advance(4 * time.Second)
	ask(t, p, "how do refunds work")
	if got := emb.calls.Load(); got != 1 {
		t.Fatalf("embedder calls within the cooldown = %d, want 1", got)
	}
	clk.Advance(2 * time.Second)
	ask(t, p, "how do refunds work")
	if got := emb.calls.Load(); got != 2 {
		t.Fatalf("embedder calls after the cooldown = %d, want 2", got)
	}
	if b, _ := p.Breakers().Lookup("model/embed"); b.State() != breaker.StateClosed {
		t.Errorf("model/embed = %v after 429s, want closed", b.State())
	}
}

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
			{Tier: tiers.NewCache(tiers.CacheConfig{Name: "cache", Cache: cache.New(cache.Config{}), Embedder: emb}),
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
