package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
)

// ownRetriever is an application's own retriever (a vector database, say):
// a retrieval.Retriever that is not a reloadable knowledge base.
type ownRetriever struct{}

func (ownRetriever) Retrieve(context.Context, string, int) ([]retrieval.Doc, error) {
	return testDocs[:1], nil
}

// TestReadyzWithOwnRetriever: a pipeline built as a library, whose
// retrieval tier uses the application's own retriever and so has no
// knowledge base to load, is ready at once; /readyz must not wait forever
// for a knowledge base it does not have.
func TestReadyzWithOwnRetriever(t *testing.T) {
	h := libraryHarness(t, pipeline.Options{Tiers: []pipeline.Stage{
		{Tier: tiers.NewRetrieval(tiers.RetrievalConfig{Retriever: ownRetriever{}})},
		{Tier: tiers.NewStatic("static", "")},
	}}, Config{})
	if a := h.ask("How do I return an item?"); a.Source != tiers.SourceRetrieval {
		t.Fatalf("source %s, want retrieval", a.Source)
	}
	if w := h.do(http.MethodGet, "/readyz", ""); w.Code != http.StatusOK {
		t.Fatalf("readyz: %d %s", w.Code, w.Body)
	}
}
