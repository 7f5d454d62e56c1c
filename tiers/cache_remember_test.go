package tiers

import (
	"context"
	"errors"
	"testing"
)

// TestSemanticCacheSkipsAnswerWithoutRetrieval: when the question's
// retrieval failed, the model tier answers without documents ("the
// knowledge base does not cover it"). That answer was not built on the
// knowledge base and must not be cached: once the retriever is back, the
// question must reach the model with its documents again.
func TestSemanticCacheSkipsAnswerWithoutRetrieval(t *testing.T) {
	srv, _ := upstream(t, reply(200, `{"choices":[{"message":{"role":"assistant","content":"The knowledge base does not cover this."},"finish_reason":"stop"}]}`))
	ret := &fakeRetriever{err: errors.New("vector database unreachable")}
	llm := NewLLM(LLMConfig{Candidates: []Candidate{candidate("m1", srv.URL)}, Retriever: ret})
	r := newCacheRig(t, nil)
	ctx := context.Background()

	q := Query{Tenant: "t", Question: "how do I return an item", Memo: &Memo{K: 5}}
	if _, err := r.sem.Answer(ctx, q); KindOf(err) != KindMiss {
		t.Fatalf("cache: %v, want a miss", err)
	}
	a, err := llm.Answer(ctx, q)
	if err != nil || a.Source != SourcePrimary || len(a.Docs) != 0 {
		t.Fatalf("llm = %+v, %v; want a primary answer without documents", a, err)
	}
	r.sem.Remember(ctx, q, a)
	if got, err := r.ask("t", q.Question); err == nil {
		t.Errorf("answer built after a failed retrieval was cached and served: %q", got.Text)
	}

	// A question with no relevant documents (no failure) is answered and
	// cached as usual.
	ret.err = nil
	q = Query{Tenant: "t", Question: "do you sell penguins", Memo: &Memo{K: 5}}
	a, err = llm.Answer(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	r.sem.Remember(ctx, q, a)
	if _, err := r.ask("t", q.Question); err != nil {
		t.Errorf("answer to a question with no relevant documents was not cached: %v", err)
	}
}
