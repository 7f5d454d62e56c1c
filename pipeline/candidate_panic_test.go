package pipeline

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ragfuse/ragfuse/tiers"
)

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
