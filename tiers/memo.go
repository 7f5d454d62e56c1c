package tiers

import (
	"context"
	"sync"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/retrieval"
)

// Memo holds work done at most once per question and shared by the tiers of
// one run: the question's embedding and its retrieved documents. A failed
// embedding or retrieval is remembered too, so a dead service is asked once.
// The zero Memo is ready to use; a nil *Memo does no memoization. A Memo is
// safe for concurrent use and must not be reused across questions.
type Memo struct {
	// K is how many documents to retrieve on first use: the most any tier
	// of the run needs. A tier asking for fewer gets the best ones.
	K int
	// Embedder, if set, embeds the question once for the semantic cache and
	// for a retriever that implements retrieval.VectorRetriever.
	Embedder cache.Embedder

	embOnce sync.Once
	vec     []float32
	embErr  error

	docsMu   sync.Mutex // held while retrieving, like a sync.Once
	docsDone bool       // the retriever was asked
	docs     []retrieval.Doc
	docsErr  error

	kbOnce sync.Once
	kb     uint64
}

// KBVersion returns the knowledge-base version the question started on:
// current() on first use, the same value after, so an answer built while
// the knowledge base was reloaded can be told apart. With a nil m it
// returns current().
func (m *Memo) KBVersion(current func() uint64) uint64 {
	if m == nil {
		return current()
	}
	m.kbOnce.Do(func() { m.kb = current() })
	return m.kb
}

// Embedding returns the embedding of question by e, computing it on first
// use. With a nil m it always calls e. If m.Embedder is set it is used in
// place of e.
func (m *Memo) Embedding(ctx context.Context, e cache.Embedder, question string) ([]float32, error) {
	if m == nil {
		return embedOne(ctx, e, question)
	}
	m.embOnce.Do(func() {
		if m.Embedder != nil {
			e = m.Embedder
		}
		m.vec, m.embErr = embedOne(ctx, e, question)
	})
	return m.vec, m.embErr
}

// Docs returns the k documents most relevant to question from r, retrieving
// max(k, m.K) on first use. With a nil m it always calls r. If ctx ends
// before r is asked (the embedding took the caller's time), nothing is
// remembered and a later call retrieves.
func (m *Memo) Docs(ctx context.Context, r retrieval.Retriever, question string, k int) ([]retrieval.Doc, error) {
	if m == nil {
		return r.Retrieve(ctx, question, k)
	}
	m.docsMu.Lock()
	defer m.docsMu.Unlock()
	if !m.docsDone {
		n := max(k, m.K)
		vr, byVector := r.(retrieval.VectorRetriever)
		byVector = byVector && m.Embedder != nil
		var vec []float32
		if byVector {
			var err error
			if vec, err = m.Embedding(ctx, m.Embedder, question); err != nil {
				vec = retrieval.NoVector // rank lexically; do not embed again
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err // the retriever was not asked: not a failed retrieval
		}
		if byVector {
			m.docs, m.docsErr = vr.RetrieveVector(ctx, question, vec, n)
		} else {
			m.docs, m.docsErr = r.Retrieve(ctx, question, n)
		}
		m.docsDone = true
	}
	if m.docsErr != nil {
		return nil, m.docsErr
	}
	if len(m.docs) > k {
		return m.docs[:k], nil
	}
	return m.docs, nil
}

// retrievalFailed reports whether the question's retrieval was tried and
// failed, so that an answer made without its documents is not cached.
func (m *Memo) retrievalFailed() bool {
	if m == nil {
		return false
	}
	m.docsMu.Lock()
	defer m.docsMu.Unlock()
	return m.docsErr != nil
}

func embedOne(ctx context.Context, e cache.Embedder, text string) ([]float32, error) {
	if e == nil {
		return nil, &Error{Kind: KindOther, Tier: embeddingTier, Err: errNoEmbedder}
	}
	vs, err := e.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return nil, &Error{Kind: KindEmpty, Tier: embeddingTier}
	}
	return vs[0], nil
}
