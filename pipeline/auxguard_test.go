package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// condensePipeline is a retrieval tier over two documents, with
// Options.Condenser calling model "rewriter" of an llmtest server; the
// model "rewriter" is also the candidate of an llm tier that is never
// reached.
func condensePipeline(t *testing.T, rl RateLimitConfig) (*Pipeline, *llmtest.Server, func(advance time.Duration)) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Config{Models: []string{"rewriter"}})
	t.Cleanup(srv.Close)
	kb, err := retrieval.New([]retrieval.Doc{
		{ID: "returns", Title: "Returns within 7 days", Text: "Return an unused jacket within 7 days of delivery."},
		{ID: "invoices", Title: "Invoices", Text: "Request an invoice from your orders."},
	})
	if err != nil {
		t.Fatal(err)
	}
	cand := tiers.Candidate{ID: "rewriter", Client: tiers.NewClient(tiers.ClientConfig{BaseURL: srv.URL})}
	p, clk := newTestPipeline(t, Options{
		Condenser: tiers.NewCondenser(tiers.CondenserConfig{Model: cand}),
		RateLimit: rl,
		Tiers: []Stage{
			{Tier: tiers.NewLLM(tiers.LLMConfig{Name: "never", Candidates: []tiers.Candidate{cand}}), Model: true,
				Breaker: breaker.Config{FailureThreshold: 7}},
			{Tier: tiers.NewRetrieval(tiers.RetrievalConfig{Retriever: kb, TopK: 1})},
			{Tier: tiers.NewStatic("static", "sorry")}, // llmtest's rewrite finds nothing
		},
	})
	// The llm tier stays out of the way: its tier breaker is open.
	if b, ok := p.Breakers().Lookup("tier/never"); ok {
		b.Trip()
	}
	return p, srv, func(d time.Duration) { clk.Advance(d) }
}

func condenseAttempt(res *Result) (Attempt, bool) {
	for _, a := range res.Attempts {
		if a.Tier == tiers.CondenseTier {
			return a, true
		}
	}
	return Attempt{}, false
}

// TestCondenseCooldownAndBreaker: the condensing model shares the breaker
// of the chat candidate with its ID; a 429 cools it down for its
// Retry-After (the rewrite is skipped, recorded as cooling_down, without a call) and
// the question is still answered from the follow-up's own words.
func TestCondenseCooldownAndBreaker(t *testing.T) {
	p, srv, advance := condensePipeline(t, RateLimitConfig{})
	if p.condenseB != p.models["rewriter"] {
		t.Fatal("the condensing model has a breaker of its own beside its chat candidate's")
	}
	q := tiers.Query{Tenant: "acme", Question: "how long do I have?",
		History: []tiers.Turn{{Role: tiers.RoleUser, Content: "I want to return a jacket"}}}
	srv.SetFault("rewriter", llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: 5 * time.Second})
	for i, want := range []string{"rate_limited", "cooling_down"} {
		res, err := p.Ask(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		a, ok := condenseAttempt(res)
		if !ok || a.Outcome != want || a.Model != "rewriter" || len(res.Docs) != 1 || res.Docs[0].ID != "returns" {
			t.Fatalf("question %d: attempts %+v, docs %v; want %s and the returns article", i, res.Attempts, res.Docs, want)
		}
		if i == 0 {
			advance(4 * time.Second)
		}
	}
	if n := srv.Stats("rewriter").Calls; n != 1 {
		t.Fatalf("%d calls of the condensing model within its cooldown, want 1", n)
	}
	srv.ClearFault("rewriter")
	advance(2 * time.Second)
	res, err := p.Ask(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := condenseAttempt(res); a.Outcome != OutcomeSuccess || srv.Stats("rewriter").Calls != 2 {
		t.Fatalf("after the cooldown: attempt %+v, %d calls", a, srv.Stats("rewriter").Calls)
	}
	if st := p.models["rewriter"].State(); st != breaker.StateClosed {
		t.Errorf("breaker after 429s: %v, want closed", st)
	}
	// A question without history is not rewritten.
	res, err = p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: "how do I return a jacket?"})
	if _, ok := condenseAttempt(res); ok || err != nil {
		t.Fatalf("a lone question: attempts %+v, %v", res.Attempts, err)
	}
}

// TestCondenseOverQuota: a question over its tenant's rate limit makes no
// model call, the rewrite included: it is skipped as over_quota and the
// question is searched for with its own words.
func TestCondenseOverQuota(t *testing.T) {
	p, srv, _ := condensePipeline(t, RateLimitConfig{TenantRPS: 0.001, TenantBurst: 1})
	q := tiers.Query{Tenant: "acme", Question: "how long do I have?",
		History: []tiers.Turn{{Role: tiers.RoleUser, Content: "I want to return a jacket"}}}
	for i, want := range []string{OutcomeSuccess, outcomeQuota} {
		res, err := p.Ask(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if a, _ := condenseAttempt(res); a.Outcome != want {
			t.Fatalf("question %d: attempts %+v, want condense %s", i, res.Attempts, want)
		}
		if i == 1 && (len(res.Docs) != 1 || res.Docs[0].ID != "returns") {
			t.Fatalf("over quota: docs %v, want the returns article", res.Docs)
		}
	}
	if n := srv.Stats("rewriter").Calls; n != 1 {
		t.Fatalf("%d calls of the condensing model, want 1 (the question within quota)", n)
	}
}

// TestRerankOverQuotaAndCandidates: the rerank retrieves its candidates
// (more than any tier shows), is an attempt of tier "rerank" with the
// reranked order, and for a question over its tenant's rate limit it is
// skipped as over_quota without a call, the retriever's order standing.
func TestRerankOverQuotaAndCandidates(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	var docs []retrieval.Doc
	for i := range 6 {
		docs = append(docs, retrieval.Doc{ID: fmt.Sprintf("d%d", i), Title: fmt.Sprintf("Refunds part %d", i),
			Text: strings.Repeat("refunds ", 6-i) + strings.Repeat("to my card ", i)})
	}
	kb, err := retrieval.New(docs)
	if err != nil {
		t.Fatal(err)
	}
	rr := &tiers.Rerank{Model: tiers.Candidate{ID: "rr"}, Candidates: 5,
		Reranker: tiers.NewRerankClient(tiers.RerankClientConfig{BaseURL: srv.URL, Model: "rr"})}
	p, _ := newTestPipeline(t, Options{
		Rerank:    rr,
		RateLimit: RateLimitConfig{TenantRPS: 0.001, TenantBurst: 1},
		Tiers: []Stage{
			{Tier: tiers.NewRetrieval(tiers.RetrievalConfig{Retriever: kb, TopK: 1})},
			{Tier: tiers.NewStatic("static", "sorry")},
		},
	})
	const q = "refunds to my card" // the retriever ranks d5 first, llmtest's reranker d4, its second
	lex, _ := kb.Retrieve(context.Background(), q, 5)
	for i, want := range []string{OutcomeSuccess, outcomeQuota} {
		res := ask(t, p, q)
		var a Attempt
		for _, at := range res.Attempts {
			if at.Tier == tiers.RerankTier {
				a = at
			}
		}
		if a.Outcome != want || a.Model != "rr" || len(res.Docs) != 1 {
			t.Fatalf("question %d: attempts %+v, docs %v; want rerank %s", i, res.Attempts, res.Docs, want)
		}
		if i == 1 && res.Docs[0].ID != lex[0].ID {
			t.Errorf("over quota: %s first, want the retriever's %s", res.Docs[0].ID, lex[0].ID)
		}
		if i == 0 && res.Docs[0].ID == lex[0].ID {
			t.Errorf("reranked: %s first, as the retriever has it; the test shows nothing", res.Docs[0].ID)
		}
	}
	if n := srv.Stats("rr").RerankCalls; n != 1 {
		t.Errorf("%d rerank calls, want 1 (the question within quota)", n)
	}
}
