package retrieval

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragfuse/ragfuse/cache"
)

// embedderRef holds an embedder for an atomic pointer.
type embedderRef struct{ cache.Embedder }

// UseEmbedder makes e the embedder of the documents and of the questions
// asked without a vector, from the next call on (a computation of the
// document vectors under way finishes with the one it started with): a
// pipeline gives the hybrid retriever the embedding model guarded by its
// breaker and cooldown. A nil e ranks lexically.
func (h *Hybrid) UseEmbedder(e cache.Embedder) {
	if e == nil {
		h.emb.Store(nil)
		return
	}
	h.emb.Store(&embedderRef{e})
}

// embedder returns the embedder in use, nil if none.
func (h *Hybrid) embedder() cache.Embedder {
	if r := h.emb.Load(); r != nil {
		return r.Embedder
	}
	return nil
}

// embedQuery embeds the question.
func (h *Hybrid) embedQuery(ctx context.Context, query string) ([]float32, error) {
	e := h.embedder()
	if e == nil {
		return nil, errNoEmbedder
	}
	vs, err := e.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("retrieval: embedding the question: %w", err)
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return nil, errors.New("retrieval: embedding the question: empty result")
	}
	return vs[0], nil
}

// embedBatch embeds the documents docs[i] for i in batch.
func (h *Hybrid) embedBatch(ctx context.Context, e cache.Embedder, docs []Doc, batch []int) ([][]float32, error) {
	if e == nil {
		return nil, errNoEmbedder
	}
	texts := make([]string, len(batch))
	for j, i := range batch {
		texts[j] = truncate(docs[i].Title+"\n"+docs[i].Text, h.cfg.MaxTextBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.BatchTimeout)
	defer cancel()
	vs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("retrieval: embedding documents: %w", err)
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("retrieval: embedding documents: got %d vectors for %d texts", len(vs), len(texts))
	}
	return vs, nil
}
