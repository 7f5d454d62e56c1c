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
	// Condense, if set, rewrites a question with history into a
	// standalone question before its documents are retrieved (the
	// pipeline sets a Condenser's Condense behind its guard). When it
	// fails, retrieval searches for the question with the salient words of
	// its earlier user turns.
	Condense func(ctx context.Context, q Query) (string, error)

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

// Docs returns the k documents most relevant to q from r, retrieving
// max(k, m.K) on first use. With a nil m it always calls r. A question
// with history is searched for with its conversation: rewritten by
// m.Condense when that succeeds, else as a retrieval.FollowUp of its
// question and earlier user turns. If ctx ends before r is asked (the
// embedding or the rewrite took the caller's time), nothing is remembered
// and a later call retrieves.
func (m *Memo) Docs(ctx context.Context, r retrieval.Retriever, q Query, k int) ([]retrieval.Doc, error) {
	if m == nil {
		return retrieval.RetrieveFollowUp(ctx, r, q.followUp(), k)
	}
	m.docsMu.Lock()
	defer m.docsMu.Unlock()
	if !m.docsDone {
		f := m.search(ctx, q)
		vec := m.vector(ctx, r, q, f)
		if err := ctx.Err(); err != nil {
			return nil, err // the retriever was not asked: not a failed retrieval
		}
		m.docs, m.docsErr = retrieval.RetrieveFollowUpVector(ctx, r, f, vec, max(k, m.K))
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

// search returns what q's documents are retrieved for: its question alone,
// its rewrite by m.Condense, or its question with its earlier user turns.
func (m *Memo) search(ctx context.Context, q Query) retrieval.FollowUp {
	f := q.followUp()
	if len(f.Previous) == 0 || m.Condense == nil {
		return f
	}
	if s, err := m.Condense(ctx, q); err == nil {
		return retrieval.FollowUp{Question: s}
	}
	return f
}

// vector returns the embedding of f's text for r, nil when r does not
// rank by vector or m has no Embedder, and retrieval.NoVector when
// embedding failed. The question's own embedding is shared with the
// semantic cache; another text (a follow-up's, a rewrite) is embedded for
// retrieval alone.
func (m *Memo) vector(ctx context.Context, r retrieval.Retriever, q Query, f retrieval.FollowUp) []float32 {
	if _, ok := r.(retrieval.VectorRetriever); !ok || m.Embedder == nil {
		return nil
	}
	var vec []float32
	var err error
	if text := f.Text(); text == q.Question {
		vec, err = m.Embedding(ctx, m.Embedder, q.Question)
	} else {
		vec, err = embedOne(ctx, m.Embedder, text)
	}
	if err != nil {
		return retrieval.NoVector // rank lexically; do not embed again
	}
	return vec
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
