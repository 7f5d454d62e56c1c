package retrieval

import (
	"context"
	"math/bits"
	"strings"
)

// FollowUp is a question asked after earlier turns of one conversation,
// such as "and who pays the postage?" after "I want to send back a
// jacket". Its question alone often names nothing the knowledge base can
// match; the earlier user turns name the subject.
type FollowUp struct {
	// Question is the question itself; its words weigh the most.
	Question string
	// Previous holds the earlier user turns of the conversation, oldest
	// first. Only the last ContextTurns are read.
	Previous []string
}

// Weights of a follow-up's earlier turns in its query, against 1 for the
// question: the newest earlier turn weighs ContextWeight, each older one
// ContextDecay times the one after it, and turns before the last
// ContextTurns are not read.
const (
	ContextWeight = 0.5
	ContextDecay  = 0.5
	ContextTurns  = 3
)

// FollowUpRetriever is a Retriever that searches for a follow-up with its
// earlier turns weighted below its question. Implementations must be safe
// for concurrent use.
type FollowUpRetriever interface {
	Retriever
	RetrieveFollowUp(ctx context.Context, f FollowUp, k int) ([]Doc, error)
}

var (
	_ FollowUpRetriever = (*Index)(nil)
	_ FollowUpRetriever = (*KnowledgeBase)(nil)
	_ FollowUpRetriever = (*Hybrid)(nil)
)

// RetrieveFollowUp returns the k documents most relevant to f from r, best
// first: through r's own RetrieveFollowUp when r is a FollowUpRetriever,
// else r.Retrieve of f.Text(). A follow-up with no earlier turns is
// r.Retrieve of the question.
func RetrieveFollowUp(ctx context.Context, r Retriever, f FollowUp, k int) ([]Doc, error) {
	if len(f.context()) == 0 {
		return r.Retrieve(ctx, f.Question, k)
	}
	if fr, ok := r.(FollowUpRetriever); ok {
		return fr.RetrieveFollowUp(ctx, f, k)
	}
	return r.Retrieve(ctx, f.Text(), k)
}

// RetrieveFollowUpVector is RetrieveFollowUp with vec, the embedding of
// f.Text() computed by the caller (nil: none at hand; NoVector: rank
// without one, see VectorRetriever): a Hybrid blends it with its lexical
// search for f, a FollowUpRetriever searches for f, another
// VectorRetriever gets RetrieveVector of f.Text() and vec.
func RetrieveFollowUpVector(ctx context.Context, r Retriever, f FollowUp, vec []float32, k int) ([]Doc, error) {
	if h, ok := r.(*Hybrid); ok {
		return h.retrieve(ctx, f, vec, k)
	}
	if fr, ok := r.(FollowUpRetriever); ok && len(f.context()) > 0 {
		return fr.RetrieveFollowUp(ctx, f, k)
	}
	if vr, ok := r.(VectorRetriever); ok && vec != nil {
		return vr.RetrieveVector(ctx, f.Text(), vec, k)
	}
	return RetrieveFollowUp(ctx, r, f, k)
}

// Text returns f as one search text, for a retriever or embedder that
// takes a plain string: the question, then the earlier turns it reads,
// newest first, one per line.
func (f FollowUp) Text() string {
	ctx := f.context()
	if len(ctx) == 0 {
		return f.Question
	}
	var b strings.Builder
	b.WriteString(f.Question)
	for i := len(ctx) - 1; i >= 0; i-- {
		b.WriteByte('\n')
		b.WriteString(ctx[i])
	}
	return b.String()
}

// context returns the earlier turns f's query reads: the last
// ContextTurns of f.Previous, oldest first.
func (f FollowUp) context() []string {
	return f.Previous[max(0, len(f.Previous)-ContextTurns):]
}

// RetrieveFollowUp is Retrieve for a follow-up: the question's terms count
// in full, and the salient words of its earlier turns join them at
// ContextWeight (decaying by ContextDecay per older turn), both in the
// BM25 score and in the relevance floor. A word of an earlier turn is
// salient if some document contains it: a place or product the documents
// never mention cannot lower a document's coverage.
func (ix *Index) RetrieveFollowUp(ctx context.Context, f FollowUp, k int) ([]Doc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k <= 0 || len(ix.docs) == 0 {
		return nil, nil
	}
	return ix.search(ctx, ix.followUpQuery(f), k, ix.cfg.minCoverage())
}

// RetrieveFollowUp is Retrieve for a follow-up: the lexical side searches
// for f (see Index.RetrieveFollowUp), the vector side for f.Text().
func (h *Hybrid) RetrieveFollowUp(ctx context.Context, f FollowUp, k int) ([]Doc, error) {
	return h.retrieve(ctx, f, nil, k)
}

// RetrieveFollowUp is Retrieve for a follow-up; see Index.RetrieveFollowUp.
func (kb *KnowledgeBase) RetrieveFollowUp(ctx context.Context, f FollowUp, k int) ([]Doc, error) {
	return kb.cur.Load().index.RetrieveFollowUp(ctx, f, k)
}

// followUpQuery parses f's question and adds the salient terms and units
// of its earlier turns, newest first, each turn at its weight.
func (ix *Index) followUpQuery(f FollowUp) query {
	q := parseQuery(f.Question)
	m := merger{ix: ix, q: &q, unitOf: make(map[string]int), termOf: make(map[string]int)}
	for i, u := range q.units {
		m.unitOf[u] = i
	}
	for i, t := range q.terms {
		m.termOf[t] = i
	}
	turns := f.context()
	w := ContextWeight
	for i := len(turns) - 1; i >= 0; i-- {
		m.add(parseQuery(turns[i]), w)
		w *= ContextDecay
	}
	return q
}

// merger adds the parsed earlier turns of a follow-up to its query.
type merger struct {
	ix     *Index
	q      *query
	unitOf map[string]int // unit -> index in q.units
	termOf map[string]int // term -> index in q.terms
}

// add merges the salient part of c, an earlier turn, into the query at
// weight w: the terms that some document has, and the units they cover.
// A unit the query has already keeps its own weight in the floor; a term
// it has already gains w times its weight in c.
func (m *merger) add(c query, w float64) {
	q := m.q
	var need uint64 // c's units covered by a salient term
	for i, t := range c.terms {
		if m.salient(t) {
			need |= c.covers[i]
		}
	}
	bit := make([]uint64, len(c.units)) // c's unit i -> its bit in q, 0 if dropped
	for i, u := range c.units {
		if need&(1<<i) == 0 {
			continue
		}
		at, ok := m.unitOf[u]
		if !ok {
			if len(q.units) == maxUnits {
				continue
			}
			m.scaleUnits()
			at = len(q.units)
			m.unitOf[u] = at
			q.units = append(q.units, u)
			q.unitScale = append(q.unitScale, w)
		}
		bit[i] = 1 << at
	}
	for i, t := range c.terms {
		if !m.salient(t) {
			continue
		}
		var cov uint64
		for b := c.covers[i]; b != 0; b &= b - 1 {
			cov |= bit[bits.TrailingZeros64(b)]
		}
		if at, ok := m.termOf[t]; ok {
			q.weights[at] += w * c.weights[i]
			q.covers[at] |= cov
			continue
		}
		m.termOf[t] = len(q.terms)
		q.terms = append(q.terms, t)
		q.weights = append(q.weights, w*c.weights[i])
		q.covers = append(q.covers, cov)
		q.weak = append(q.weak, c.weak[i])
	}
}

// salient reports whether a term of an earlier turn joins the query: some
// document has it.
func (m *merger) salient(t string) bool { return len(m.ix.postingsOf(t)) > 0 }

// scaleUnits prepares the query for units of earlier turns, once: the
// question's own units weigh 1 and are marked as its own.
func (m *merger) scaleUnits() {
	q := m.q
	if q.unitScale != nil {
		return
	}
	q.own = 1<<len(q.units) - 1
	q.unitScale = make([]float64, len(q.units), maxUnits)
	for i := range q.unitScale {
		q.unitScale[i] = 1
	}
}
