package tiers

import (
	"context"
	"errors"
	"time"

	"github.com/ragfuse/ragfuse/cache"
)

// embeddingTier names embedding calls in errors.
const embeddingTier = "embedding"

// GuardedEmbedder is an embedder whose calls go through a CandidateGuard,
// like the model calls of an LLM tier. A call the guard refuses fails at
// once with an *Error of KindUnavailable wrapping ErrUnavailable; the
// guard hears the outcome of every call it lets through. The errors of
// Embedder (such as cache.OpenAIEmbedder's, through a client made by
// NewClient) are returned as an *Error of tier "embedding" with the Kinds
// of a chat call: timeout, connection, server_error, auth, rate_limited
// (with the Retry-After of the 429), and malformed or empty for a
// response without the vectors asked for. It is safe for concurrent use
// when Embedder and Guard are.
type GuardedEmbedder struct {
	Embedder cache.Embedder
	// Model is the embedding model as the guard sees it: its ID (e.g. the
	// breaker "model/<ID>") and Cooldown. Its Client is not used.
	Model Candidate
	Guard CandidateGuard
}

var _ cache.Embedder = (*GuardedEmbedder)(nil)

// Embed embeds texts if the guard lets the call through.
func (g *GuardedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	release, ok := g.Guard.Acquire(ctx, embeddingTier, g.Model)
	if !ok {
		return nil, &Error{Kind: KindUnavailable, Tier: embeddingTier, Model: g.Model.ID, Err: ErrUnavailable}
	}
	cctx, note := withNote(ctx)
	vs, err := g.Embedder.Embed(cctx, texts)
	if err != nil {
		te := classifyEmbedding(g.Model.ID, err, ctx.Err(), note.retryAfter)
		release(te, Usage{})
		return nil, te
	}
	release(nil, Usage{})
	return vs, nil
}

// classifyEmbedding returns err, the error of an embedding call to model,
// as an *Error classified like a chat call's; ctxErr is the call
// context's error, if any.
func classifyEmbedding(model string, err, ctxErr error, retryAfter time.Duration) *Error {
	e := classifyCall(embeddingTier, model, err, ctxErr, retryAfter)
	if e.Kind == KindOther {
		switch {
		case errors.Is(err, cache.ErrNoEmbeddings):
			e.Kind = KindEmpty
		case errors.Is(err, cache.ErrEmbeddingShape):
			e.Kind = KindMalformed
		}
	}
	return e
}
