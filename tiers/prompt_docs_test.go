package tiers

import (
	"context"
	"strings"
	"testing"

	"github.com/ragfuse/ragfuse/retrieval"
)

// greedyRetriever returns all its documents, however many were asked for.
type greedyRetriever struct{ docs []retrieval.Doc }

func (g greedyRetriever) Retrieve(context.Context, string, int) ([]retrieval.Doc, error) {
	return g.docs, nil
}

// TestLLMPromptKeepsContextDocs guards LLMConfig.ContextDocs ("how many
// documents go into the prompt") when the tier runs without a Memo, which
// cuts the documents to k itself: a retriever that returns more than it was
// asked for does not grow the prompt or the answer's documents.
func TestLLMPromptKeepsContextDocs(t *testing.T) {
	srv, last := upstream(t, reply(200, okBody))
	l := NewLLM(LLMConfig{Retriever: greedyRetriever{testDocs}, ContextDocs: 2, Candidates: []Candidate{candidate("m", srv.URL)}})
	a, err := l.Answer(context.Background(), Query{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Docs) != 2 || strings.Contains(*last, "[3]") {
		t.Fatalf("%d documents in the answer; request:\n%s", len(a.Docs), *last)
	}
}
