package tiers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/retrieval"
)

// Memo holds work done at most once per question and shared by the tiers of
// one run: the question's embedding and its retrieved (and reranked)
// documents. A failed embedding or retrieval is remembered too, so a dead
// service is asked once.
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
	// Rerank, if set, reorders the retrieved documents once, for the
	// search's question (the pipeline sets a Rerank's Apply behind its
	// guard; K then counts its candidates). A failed rerank keeps the
	// retriever's order.
	Rerank func(ctx context.Context, question string, docs []retrieval.Doc) []retrieval.Doc
	// RetrievalTimeout, if > 0, is the retrieval's own time limit (the
	// rewrite and the embedding for it included): it runs apart from the
	// tier that asks first, which stops waiting when its own time runs
	// out, and goes on for the tiers after it (see Docs). 0: the asking
	// tier's context bounds the retrieval.
	RetrievalTimeout time.Duration

	embOnce sync.Once
	vec     []float32
	embErr  error

	docsMu sync.Mutex // guards the three fields below
	// docsReady is closed once docs and docsErr are set; nil until a
	// retrieval starts, and again after one cut short with its asker.
	docsReady chan struct{}
	docs      []retrieval.Doc
	docsErr   error
	waited    atomic.Int64 // nanoseconds the tiers spent in Docs

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
// max(k, m.K) on first use; later and concurrent calls wait for that
// retrieval. With a nil m it always calls r. A question with history is
// searched for with its conversation: rewritten by m.Condense when that
// succeeds, else as a retrieval.FollowUp of its question and earlier user
// turns; m.Rerank, if set, then reorders the documents. A retrieval that
// fails is remembered, except one cut short because the context of its
// asker ended (without RetrievalTimeout), or not even started because the
// rewrite or the embedding took the asker's time: a later call then
// retrieves again. When ctx ends first, Docs returns ctx.Err() at once;
// with RetrievalTimeout the retrieval goes on for the next call.
func (m *Memo) Docs(ctx context.Context, r retrieval.Retriever, q Query, k int) ([]retrieval.Doc, error) {
	return m.documents(ctx, r, q, k, true)
}

// documents implements Docs; without detach (the retrieval tier, whose
// own time limit is the one that matters to it) a retrieval it starts
// runs under ctx whatever its deadline.
func (m *Memo) documents(ctx context.Context, r retrieval.Retriever, q Query, k int, detach bool) ([]retrieval.Doc, error) {
	if m == nil {
		return retrieval.RetrieveFollowUp(ctx, r, q.followUp(), k)
	}
	start := time.Now()
	defer func() { m.waited.Add(int64(time.Since(start))) }()
	for {
		ready := m.startDocs(ctx, r, q, k, detach)
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		m.docsMu.Lock()
		forgotten := m.docsReady != ready
		docs, err := m.docs, m.docsErr
		m.docsMu.Unlock()
		switch {
		case forgotten: // cut short with its asker: retrieve for this call
		case err != nil:
			return nil, err
		default:
			return docs[:min(len(docs), k)], nil
		}
	}
}

// Waited returns the time the tiers of the question spent in Docs,
// waiting for its documents; 0 with a nil m.
func (m *Memo) Waited() time.Duration {
	if m == nil {
		return 0
	}
	return time.Duration(m.waited.Load())
}

// startDocs returns the channel closed when the question's retrieval is
// done, starting one (of max(k, m.K) documents) if none is under way or
// done. The retrieval runs before startDocs returns, under ctx and
// RetrievalTimeout, unless detach is set and ctx may end before that
// limit: then it runs in a goroutine of its own, under the limit alone.
func (m *Memo) startDocs(ctx context.Context, r retrieval.Retriever, q Query, k int, detach bool) chan struct{} {
	m.docsMu.Lock()
	if ready := m.docsReady; ready != nil {
		m.docsMu.Unlock()
		return ready
	}
	ready := make(chan struct{})
	m.docsReady = ready
	m.docsMu.Unlock()
	n := max(k, m.K)
	limit := m.RetrievalTimeout
	if d, ok := ctx.Deadline(); !detach || limit <= 0 || !ok || !d.Before(time.Now().Add(limit)) {
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if limit > 0 {
			rctx, cancel = context.WithTimeout(ctx, limit)
		}
		docs, err := m.retrieve(rctx, r, q, n)
		cancel()
		m.finishDocs(ready, docs, err, err != nil && ctx.Err() != nil)
		return ready
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	go func() {
		defer cancel()
		docs, err := m.retrieve(rctx, r, q, n)
		m.finishDocs(ready, docs, err, false)
	}()
	return ready
}

// finishDocs sets the retrieval's outcome, or forgets it, and closes ready.
func (m *Memo) finishDocs(ready chan struct{}, docs []retrieval.Doc, err error, forget bool) {
	m.docsMu.Lock()
	if forget {
		m.docsReady = nil
	} else {
		m.docs, m.docsErr = docs, err
	}
	m.docsMu.Unlock()
	close(ready)
}

// retrieve asks r for n documents about q (see search), by vector when r
// ranks by one. A panic of r is returned as an error.
func (m *Memo) retrieve(ctx context.Context, r retrieval.Retriever, q Query, n int) (docs []retrieval.Doc, err error) {
	defer func() {
		if v := recover(); v != nil {
			docs, err = nil, &Error{Kind: KindOther, Tier: "retrieval", Err: fmt.Errorf("retriever panicked: %v", v)}
		}
	}()
	f := m.search(ctx, q)
	vec := m.vector(ctx, r, q, f)
	if err := ctx.Err(); err != nil {
		return nil, err // the retriever was not asked: not a failed retrieval
	}
	docs, err = retrieval.RetrieveFollowUpVector(ctx, r, f, vec, n)
	if err == nil && m.Rerank != nil && len(docs) > 0 {
		docs = m.Rerank(ctx, f.Question, docs)
	}
	return docs, err
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
