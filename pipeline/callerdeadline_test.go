package pipeline

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// TestCallerDeadlineIgnoredByModelBreaker: a model call cut short because
// the caller's own deadline passed is the caller going away: neither the
// tier's breaker nor the model's counts it. (The tier's time limit ends
// with the caller's deadline here, so either may end the call first;
// whichever it is, the outcome is the same.)
func TestCallerDeadlineIgnoredByModelBreaker(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	client := tiers.NewClient(tiers.ClientConfig{BaseURL: srv.URL, APIKey: "test-key", HTTPClient: hc})
	primary := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Source: tiers.SourcePrimary,
		Candidates: []tiers.Candidate{{ID: bigModel, Client: client}}})
	br := breaker.Config{FailureThreshold: 100, OpenDuration: openFor}
	p, _ := newTestPipeline(t, Options{RequestTimeout: time.Minute, Tiers: []Stage{
		{Tier: primary, Model: true, Breaker: br},
		{Tier: tiers.NewStatic("static", "")}}})
	srv.SetFault(bigModel, llmtest.Fault{Mode: llmtest.ModeHang})

	for range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
		_, _ = p.Ask(ctx, tiers.Query{Tenant: "acme", Question: "q"})
		cancel()
	}
	if err := p.Close(); err != nil { // waits for the run
		t.Fatal(err)
	}
	tb, _ := p.Breakers().Lookup("tier/primary")
	mb, _ := p.Breakers().Lookup("model/" + bigModel)
	ts, ms := tb.Snapshot(), mb.Snapshot()
	if ts.Calls != 0 || ms.Calls != 0 {
		t.Fatalf("calls cut short by the caller's deadline were counted: tier breaker %d failures of %d calls, model breaker %d of %d",
			ts.Failures, ts.Calls, ms.Failures, ms.Calls)
	}
}
