package config

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// vectorsConfig blends the semantic cache's remote embedder into the
// retrieval tier's ranking; %s is the llmtest URL.
const vectorsConfig = `
server: {request_timeout: 3s}
models:
  embed: {base_url: "%s", kind: embedding}
tiers:
  - {name: cache, kind: semantic_cache, embedder: embed, timeout: 100ms, breaker: {failure_threshold: -1, failure_rate: -1}}
  - {name: retrieval, kind: retrieval, top_k: 2}
  - {name: static, kind: static, message: "Please contact customer service."}
`

// buildVectors builds vectorsConfig over srv, the embedding service having
// fault f from the start.
func buildVectors(t *testing.T, f llmtest.Fault) (*llmtest.Server, *pipeline.Pipeline, *clock.Manual, *retrieval.KnowledgeBase) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	srv.SetFault("embed", f)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	kb, err := retrieval.New(embedKB)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(epoch)
	p := mustBuild(t, mustParse(t, fmt.Sprintf(vectorsConfig, srv.URL)), Env{Clock: clk, HTTPClient: hc, KnowledgeBase: kb, Getenv: noEnv})
	return srv, p, clk, kb
}

// TestDocumentEmbeddingOpensItsBreaker: the documents are embedded
// through the breaker "model/embed" like the questions: two failed runs
// open it, and the run after a reload is skipped without a call while it
// is open; Status says the vectors are not ready.
func TestDocumentEmbeddingOpensItsBreaker(t *testing.T) {
	srv, p, clk, kb := buildVectors(t, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
	ctx := context.Background()
	state := func() breaker.State {
		b, _ := p.Breakers().Lookup("model/embed")
		return b.State()
	}
	if err := p.WaitVectors(ctx); tiers.KindOf(err) != tiers.KindServer {
		t.Fatalf("WaitVectors = %v, want a server error", err)
	}
	if s := state(); s != breaker.StateClosed {
		t.Fatalf("model/embed is %v after one failure, want closed", s)
	}
	clk.Advance(30 * time.Second) // the hybrid retriever's retry delay
	if err := p.WaitVectors(ctx); tiers.KindOf(err) != tiers.KindServer {
		t.Fatalf("second run: %v, want a server error", err)
	}
	if s := state(); s != breaker.StateOpen {
		t.Fatalf("model/embed is %v after two failed runs, want open", s)
	}
	calls := srv.Stats("embed").EmbeddingCalls
	if err := kb.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitVectors(ctx); !errors.Is(err, tiers.ErrUnavailable) {
		t.Fatalf("run while open: %v, want the guard's refusal", err)
	}
	if got := srv.Stats("embed").EmbeddingCalls; got != calls {
		t.Errorf("%d embedding calls while model/embed is open", got-calls)
	}
	v := p.Status().KnowledgeBase.Vectors
	if v == nil || v.Ready || v.Version != 2 || v.Error == "" || !v.FailedAt.Equal(clk.Now()) {
		t.Errorf("status vectors = %+v, want version 2 not ready with the failure", v)
	}
}

// TestFirstQuestionDoesNotWaitForCorpusEmbedding: with an embedding
// service that never answers, the first question after Build is answered
// by the retrieval tier, ranked by words, while the documents' embedding
// hangs in the background. Were the corpus embedded inside the question,
// the retrieval tier would wait for it past its time limit and the static
// tier would answer.
func TestFirstQuestionDoesNotWaitForCorpusEmbedding(t *testing.T) {
	srv, p, _, _ := buildVectors(t, llmtest.Fault{Mode: llmtest.ModeHang})
	start := time.Now()
	res := ask(t, p, "How do I return an item I bought?")
	took := time.Since(start)
	expectAttempts(t, res, "cache:timeout", "retrieval:success")
	if res.Source != tiers.SourceRetrieval || len(res.Docs) == 0 || res.Docs[0].ID != "returns" || took > 2*time.Second {
		t.Fatalf("first question: %s with %v after %v, want the returns article from the retrieval tier at once",
			res.Source, docIDs(res.Docs), took)
	}
	if v := p.Status().KnowledgeBase.Vectors; v == nil || v.Ready {
		t.Errorf("status vectors = %+v, want not ready", v)
	}
	if st := srv.Stats("embed"); st.EmbeddingCalls < 1 || st.EmbeddingCalls > 2 {
		t.Errorf("%d embedding calls, want the question's and at most the documents' one batch", st.EmbeddingCalls)
	}
	t.Logf("first answer after %v", took)
}
