package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
)

// hangingRetriever holds every retrieval until its context ends.
type hangingRetriever struct{}

func (hangingRetriever) Retrieve(ctx context.Context, _ string, _ int) ([]retrieval.Doc, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCandidateUnreachedIsNotItsAttempt guards the attempt record of an llm
// tier whose time ran out before any candidate was called (here in a slow
// retrieval): the attempt must not name a model that was never called.
func TestCandidateUnreachedIsNotItsAttempt(t *testing.T) {
	llm := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Retriever: hangingRetriever{}, Candidates: []tiers.Candidate{
		{ID: "a", Client: tiers.NewClient(tiers.ClientConfig{BaseURL: "http://127.0.0.1:1", HTTPClient: panicDoer{}})}}})
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{
		{Tier: llm, Model: true, Timeout: 20 * time.Millisecond}, {Tier: tiers.NewStatic("static", "")}}})
	res := ask(t, p, "q")
	if at := res.Attempts[0]; at.Tier != "primary" || at.Model != "" || at.Outcome != string(tiers.KindTimeout) {
		t.Errorf("attempt = %+v, want primary, no model, timeout", at)
	}
	if snap := p.models["a"].Snapshot(); snap.Calls != 0 {
		t.Errorf("model breaker = %+v, want no call", snap)
	}
}
