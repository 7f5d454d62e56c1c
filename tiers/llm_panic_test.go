package tiers

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

type panickingDoer struct{}

func (panickingDoer) Do(*http.Request) (*http.Response, error) { panic("transport bug") }

// TestLLMPanickingCandidateIsReleased guards CandidateGuard's "release must
// be called exactly once": a candidate call that panics is released with
// an error before the panic goes on to the tier's caller.
func TestLLMPanickingCandidateIsReleased(t *testing.T) {
	g := &recordingGuard{}
	l := NewLLM(LLMConfig{Guard: g, Candidates: []Candidate{
		{ID: "p", Client: NewClient(ClientConfig{BaseURL: "http://127.0.0.1:1", HTTPClient: panickingDoer{}})}}})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic was swallowed")
			}
		}()
		_, _ = l.Answer(context.Background(), Query{Question: "q"})
	}()
	if got := strings.Join(g.log, " "); got != "p:other" {
		t.Fatalf("guard log = %q, want one release with kind other", got)
	}
}
