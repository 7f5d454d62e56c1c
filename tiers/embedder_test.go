package tiers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/cache"
)

// releasedGuard lets every call through unless refuse is set, and keeps
// the errors it was released with.
type releasedGuard struct {
	refuse bool
	asked  []string // tier/model of each Acquire
	errs   []error
}

func (g *releasedGuard) Acquire(ctx context.Context, tier string, c Candidate) (context.Context, func(error, Usage), bool) {
	g.asked = append(g.asked, tier+"/"+c.ID)
	if g.refuse {
		return nil, nil, false
	}
	return ctx, func(err error, _ Usage) { g.errs = append(g.errs, err) }, true
}

// embedderFunc adapts a function to cache.Embedder.
type embedderFunc func(ctx context.Context, texts []string) ([][]float32, error)

func (f embedderFunc) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return f(ctx, texts)
}

func TestGuardedEmbedderRefused(t *testing.T) {
	calls := 0
	g := &releasedGuard{refuse: true}
	e := &GuardedEmbedder{Model: Candidate{ID: "embed"}, Guard: g,
		Embedder: embedderFunc(func(context.Context, []string) ([][]float32, error) { calls++; return nil, nil })}
	_, err := e.Embed(context.Background(), []string{"q"})
	var te *Error
	if !errors.As(err, &te) || te.Kind != KindUnavailable || te.Tier != "embedding" || te.Model != "embed" || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want unavailable embedding/embed", err)
	}
	if calls != 0 || strings.Join(g.asked, " ") != "embedding/embed" {
		t.Fatalf("embedder calls %d, guard asked %v", calls, g.asked)
	}
}

// TestGuardedEmbedderClassifies guards the classification of embedding
// errors as a chat call's, which the guard hears (its breaker and
// cooldown act on the Kind) and the caller gets.
func TestGuardedEmbedderClassifies(t *testing.T) {
	limited, _ := upstream(t, reply(429, `{"error":{"message":"slow down"}}`, "Retry-After", "7"))
	down, _ := upstream(t, reply(503, `{"error":{"message":"down"}}`))
	for _, tt := range []struct {
		name  string
		emb   cache.Embedder
		kind  Kind
		after time.Duration
	}{
		{"429 with Retry-After", openAIEmbedder(limited.URL), KindRateLimited, 7 * time.Second},
		{"503", openAIEmbedder(down.URL), KindServer, 0},
		{"no vectors", failing(fmt.Errorf("%w: %w", cache.ErrEmbeddingShape, cache.ErrNoEmbeddings)), KindEmpty, 0},
		{"wrong shape", failing(fmt.Errorf("%w: 2 vectors for 1 text", cache.ErrEmbeddingShape)), KindMalformed, 0},
		{"other", failing(errors.New("broken")), KindOther, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &releasedGuard{}
			_, err := (&GuardedEmbedder{Embedder: tt.emb, Model: Candidate{ID: "embed"}, Guard: g}).Embed(context.Background(), []string{"q"})
			var te *Error
			if !errors.As(err, &te) || te.Kind != tt.kind || te.RetryAfter != tt.after || te.Tier != "embedding" {
				t.Fatalf("err = %v (%+v), want %s retry after %v", err, te, tt.kind, tt.after)
			}
			if len(g.errs) != 1 || g.errs[0] != err {
				t.Fatalf("released with %v, want once with the call's error", g.errs)
			}
		})
	}

	g := &releasedGuard{}
	vs, err := (&GuardedEmbedder{Embedder: cache.NewHashEmbedder(8), Model: Candidate{ID: "embed"}, Guard: g}).Embed(context.Background(), []string{"q"})
	if err != nil || len(vs) != 1 || len(g.errs) != 1 || g.errs[0] != nil {
		t.Fatalf("success: vectors %v err %v, released with %v", vs, err, g.errs)
	}
}

func openAIEmbedder(url string) cache.Embedder {
	return cache.NewOpenAIEmbedder(cache.OpenAIEmbedderConfig{Client: NewClient(ClientConfig{BaseURL: url, APIKey: "k"}), Model: "e"})
}

func failing(err error) cache.Embedder {
	return embedderFunc(func(context.Context, []string) ([][]float32, error) { return nil, err })
}
