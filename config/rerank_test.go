package config

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// rerankRigConfig reranks the documents of the test knowledge base for a
// retrieval tier; %[1]s is the llmtest URL, %[2]s the rerank settings.
const rerankRigConfig = `
server: {request_timeout: 3s}
models:
  rr: {base_url: "%[1]s", kind: rerank}
knowledge_base: {path: ../testdata/kb, rerank: {model: rr, timeout: 300ms%[2]s}}
tiers:
  - {name: retrieval, kind: retrieval, top_k: 3}
  - {name: static, kind: static, message: "Please contact customer service."}
`

// rerankQuestion is ranked differently by the keyword index and by
// llmtest's reranker.
const rerankQuestion = "How long does a refund take to reach my credit card?"

type rerankRig struct {
	srv *llmtest.Server
	p   *pipeline.Pipeline
	clk *clock.Manual
}

func newRerankRig(t *testing.T, extra string, kb *retrieval.KnowledgeBase) *rerankRig {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	clk := clock.NewManual(epoch)
	cfg := mustParse(t, fmt.Sprintf(rerankRigConfig, srv.URL, extra))
	return &rerankRig{srv: srv, p: mustBuild(t, cfg, Env{Clock: clk, HTTPClient: hc, KnowledgeBase: kb, Getenv: noEnv}), clk: clk}
}

func (r *rerankRig) calls() int64 { return r.srv.Stats("rr").RerankCalls }

// orders returns the keyword index's top 3 for q and the order llmtest's
// reranker gives them.
func rerankOrders(t *testing.T, srv *llmtest.Server, q string) (lexical, reranked []string) {
	t.Helper()
	kb, err := retrieval.Open("../testdata/kb")
	if err != nil {
		t.Fatal(err)
	}
	lex, _ := kb.Retrieve(context.Background(), q, 20)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := tiers.NewRerankClient(tiers.RerankClientConfig{BaseURL: srv.URL, Model: "probe", HTTPClient: &http.Client{Transport: tr}})
	rr, err := retrieval.RerankDocs(context.Background(), c, q, lex, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return docIDs(lex[:3]), docIDs(rr[:3])
}

// TestRerankMatrix injects every llmtest fault into the reranker: the
// question is answered by the retrieval tier all the same, in the
// retriever's order when the rerank fails (in the reranker's when it
// answers), with the rerank attempt's outcome; two failures open the
// breaker "model/rr", after which the reranker is not called, and a 429
// cools it down instead.
func TestRerankMatrix(t *testing.T) {
	tests := map[llmtest.Mode]struct {
		fault   llmtest.Fault
		outcome string
	}{
		llmtest.ModeOK:        {llmtest.Fault{}, "success"},
		llmtest.ModeLatency:   {llmtest.Fault{Mode: llmtest.ModeLatency, Delay: 20 * time.Millisecond}, "success"},
		llmtest.ModeHang:      {llmtest.Fault{Mode: llmtest.ModeHang}, "timeout"},
		llmtest.ModeStatus:    {llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503}, "server_error"},
		llmtest.ModeRateLimit: {llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: 20 * time.Second}, "rate_limited"},
		llmtest.ModeReset:     {llmtest.Fault{Mode: llmtest.ModeReset}, "connection"},
		llmtest.ModeBreak:     {llmtest.Fault{Mode: llmtest.ModeBreak}, "connection"},
		llmtest.ModeStall:     {llmtest.Fault{Mode: llmtest.ModeStall}, "timeout"},
		llmtest.ModeMalformed: {llmtest.Fault{Mode: llmtest.ModeMalformed}, "malformed"},
		llmtest.ModeEmpty:     {llmtest.Fault{Mode: llmtest.ModeEmpty}, "empty"},
	}
	for _, mode := range llmtest.Modes {
		tt, ok := tests[mode]
		if !ok {
			t.Fatalf("no case for mode %s", mode)
		}
		t.Run(string(mode), func(t *testing.T) {
			r := newRerankRig(t, "", nil)
			lexical, reranked := rerankOrders(t, r.srv, rerankQuestion)
			if slices.Equal(lexical, reranked) {
				t.Fatalf("the reranker keeps the order %v: the test shows nothing", lexical)
			}
			r.srv.SetFault("rr", tt.fault)
			want := lexical
			if tt.outcome == "success" {
				want = reranked
			}
			for i := range 3 {
				before := r.calls()
				res := ask(t, r.p, rerankQuestion)
				outcome := tt.outcome
				switch {
				case i > 0 && tt.outcome == "rate_limited": // cooling down for Retry-After
					outcome = "cooling_down"
				case i == 2 && tt.outcome != "success" && tt.outcome != "rate_limited":
					outcome = "breaker_open"
				}
				expectAttempts(t, res, "rerank/rr:"+outcome, "retrieval:success")
				if res.Source != tiers.SourceRetrieval || !slices.Equal(docIDs(res.Docs), want) {
					t.Fatalf("question %d: %s with %v, want retrieval with %v", i+1, res.Source, docIDs(res.Docs), want)
				}
				if called := r.calls() - before; called != map[bool]int64{true: 0, false: 1}[outcome == "breaker_open" || outcome == "cooling_down"] {
					t.Fatalf("question %d: %d rerank calls with outcome %s", i+1, called, outcome)
				}
			}
			b, _ := r.p.Breakers().Lookup("model/rr")
			if wantOpen := tt.outcome != "success" && tt.outcome != "rate_limited"; (b.State() == breaker.StateOpen) != wantOpen {
				t.Errorf("model/rr is %v, want open %v", b.State(), wantOpen)
			}
		})
	}
}

// TestRerankMinScore: documents the reranker scores below min_score are
// dropped, so an out-of-domain question that shares words with an article
// falls to the static tier, while a covered question keeps its article.
func TestRerankMinScore(t *testing.T) {
	kb, err := retrieval.New([]retrieval.Doc{
		{ID: "return", Title: "Return an item", Text: "How to return an item you bought."},
		{ID: "intl", Title: "United States shipping",
			Text: "Parcels reach New York, Texas and California in seven days; recipients pay customs duties on delivery."},
	})
	if err != nil {
		t.Fatal(err)
	}
	const ood = "Who was the first president of the United States?"
	if docs, _ := kb.Retrieve(context.Background(), ood, 3); len(docs) == 0 {
		t.Fatal("the keyword index gives the out-of-domain question no document: the test shows nothing")
	}
	r := newRerankRig(t, ", min_score: 0.5", kb)
	res := ask(t, r.p, ood)
	expectAttempts(t, res, "rerank/rr:success", "retrieval:no_docs")
	if res.Source != tiers.SourceStatic || len(res.Docs) != 0 {
		t.Errorf("out of domain: %s with %+v, want static with no documents", res.Source, res.Docs)
	}
	res = ask(t, r.p, "How do I return an item I bought?")
	if res.Source != tiers.SourceRetrieval || len(res.Docs) != 1 || res.Docs[0].ID != "return" || res.Docs[0].Score < 0.5 {
		t.Errorf("covered: %s with %+v, want retrieval with the return article scored >= 0.5", res.Source, res.Docs)
	}
}
