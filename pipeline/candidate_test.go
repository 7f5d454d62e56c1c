package pipeline

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
)

// TestCandidateCallsShareTheRunsSlot guards the run's candidate slot: calls
// made one after another reuse it, a call made while another is under way
// gets its own, and every release reports to its own model's breaker and
// records its own attempt.
func TestCandidateCallsShareTheRunsSlot(t *testing.T) {
	llm := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Candidates: []tiers.Candidate{{ID: "a"}, {ID: "b"}}})
	p, err := New(Options{Tiers: []Stage{{Tier: llm, Model: true}, {Tier: tiers.NewStatic("static", "")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	r := new(run)
	p.startRun(r, ctx, tiers.Query{Tenant: "acme", Question: "q"}, false)
	c := &r.guard
	c.stage = p.stages[0]
	a, b := tiers.Candidate{ID: "a"}, tiers.Candidate{ID: "b"}

	_, relA, ok := c.Acquire(ctx, "primary", a)
	if !ok {
		t.Fatal("a refused")
	}
	_, relB, ok := c.Acquire(ctx, "primary", b) // a is still under way
	if !ok {
		t.Fatal("b refused")
	}
	relB(nil, tiers.Usage{CompletionTokens: 2})
	relA(&tiers.Error{Kind: tiers.KindServer, Err: errors.New("502")}, tiers.Usage{})
	_, relA2, ok := c.Acquire(ctx, "primary", a) // the slot is free again
	if !ok {
		t.Fatal("a refused the second time")
	}
	relA2(nil, tiers.Usage{})

	want := []struct{ model, outcome string }{{"b", OutcomeSuccess}, {"a", string(tiers.KindServer)}, {"a", OutcomeSuccess}}
	if len(r.attempts) != len(want) {
		t.Fatalf("attempts = %+v, want %d", r.attempts, len(want))
	}
	for i, w := range want {
		if got := r.attempts[i]; got.Model != w.model || got.Outcome != w.outcome || got.Tier != "primary" {
			t.Errorf("attempt %d = %+v, want model %s outcome %s", i, got, w.model, w.outcome)
		}
	}
	if got := r.attempts[0].Usage.CompletionTokens; got != 2 {
		t.Errorf("b's usage = %d tokens, want 2", got)
	}
	snapA, snapB := p.models["a"].Snapshot(), p.models["b"].Snapshot()
	if snapA.Calls != 2 || snapA.Failures != 1 || snapB.Calls != 1 || snapB.Failures != 0 {
		t.Errorf("breakers: a %+v, b %+v; want a 2 calls 1 failure, b 1 call", snapA, snapB)
	}
}

// panicDoer is an HTTP client whose every request panics.
type panicDoer struct{}

func (panicDoer) Do(*http.Request) (*http.Response, error) { panic("transport bug") }

// TestPanickingCandidateReportsToItsBreaker guards the candidate guard's
// contract when a candidate call panics: its release is still made once,
// so the model's breaker hears a failure (a half-open probe is not left
// hanging) and the attempt names the model.
func TestPanickingCandidateReportsToItsBreaker(t *testing.T) {
	llm := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Candidates: []tiers.Candidate{
		{ID: "a", Client: tiers.NewClient(tiers.ClientConfig{BaseURL: "http://127.0.0.1:1", HTTPClient: panicDoer{}})}}})
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: llm, Model: true}, {Tier: tiers.NewStatic("static", "")}}})
	res := ask(t, p, "q")
	if res.Source != tiers.SourceStatic {
		t.Fatalf("source = %s", res.Source)
	}
	at := res.Attempts[0]
	if at.Tier != "primary" || at.Model != "a" || at.Outcome != string(tiers.KindOther) || !strings.Contains(at.Error, "transport bug") {
		t.Errorf("attempt = %+v, want primary/a/other", at)
	}
	if snap := p.models["a"].Snapshot(); snap.Calls != 1 || snap.Failures != 1 {
		t.Errorf("model breaker = %+v, want 1 call, 1 failure", snap)
	}
}

// hangingRetriever holds every retrieval until its context ends.
type hangingRetriever struct{}

func (hangingRetriever) Retrieve(ctx context.Context, _ string, _ int) ([]retrieval.Doc, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCandidateUnreachedIsNotItsAttempt guards the attempt record of an llm
// tier whose time ran out before any candidate was called (here in a slow
// retrieval): the attempt must not name a model that was never called,
// and is retrieving, which no breaker counts.
func TestCandidateUnreachedIsNotItsAttempt(t *testing.T) {
	llm := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Retriever: hangingRetriever{}, Candidates: []tiers.Candidate{
		{ID: "a", Client: tiers.NewClient(tiers.ClientConfig{BaseURL: "http://127.0.0.1:1", HTTPClient: panicDoer{}})}}})
	p, _ := newTestPipeline(t, Options{RetrievalTimeout: 50 * time.Millisecond, Tiers: []Stage{
		{Tier: llm, Model: true, Timeout: 20 * time.Millisecond}, {Tier: tiers.NewStatic("static", "")}}})
	res := ask(t, p, "q")
	if at := res.Attempts[0]; at.Tier != "primary" || at.Model != "" || at.Outcome != string(tiers.KindRetrieving) {
		t.Errorf("attempt = %+v, want primary, no model, retrieving", at)
	}
	if snap := p.stages[0].breaker.Snapshot(); snap.Failures != 0 {
		t.Errorf("tier breaker = %+v, want no failure", snap)
	}
	if snap := p.models["a"].Snapshot(); snap.Calls != 0 {
		t.Errorf("model breaker = %+v, want no call", snap)
	}
}
