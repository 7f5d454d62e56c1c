package pipeline

import (
	"context"
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
