package pipeline

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

func TestIgnoredKindsDoNotTrip(t *testing.T) {
	for _, k := range []tiers.Kind{tiers.KindRateLimited, tiers.KindContextLength, tiers.KindContentFilter,
		tiers.KindBadRequest, tiers.KindMiss, tiers.KindNoDocs, tiers.KindUnavailable} {
		t.Run(string(k), func(t *testing.T) {
			p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: tier("t", tiers.SourcePrimary, fails(k))},
				{Tier: tier("s", tiers.SourceStatic, answers("x"))}}})
			for range 5 {
				ask(t, p, "q")
			}
			if st := p.Breakers().Get("tier/t").State(); st != breaker.StateClosed {
				t.Fatalf("state = %v", st)
			}
		})
	}
}

// TestDescribeHidesURLSecrets: an Attempt's Error names the endpoint of a
// failed connection, without the password or query of its URL (net/http
// hides only the password).
func TestDescribeHidesURLSecrets(t *testing.T) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost,
		"http://user:pw-secret@127.0.0.1:1/v1/chat/completions?api-key=sk-secret#frag", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = http.DefaultClient.Do(req)
	if err == nil {
		t.Fatal("a call to port 1 succeeded")
	}
	got := describe(&tiers.Error{Kind: tiers.KindConnection, Err: err})
	if strings.Contains(got, "secret") || strings.Contains(got, "frag") {
		t.Errorf("describe = %q: it shows a secret of the URL", got)
	}
	if !strings.HasPrefix(got, "Post http://127.0.0.1:1/v1/chat/completions: ") || !strings.Contains(got, "refused") {
		t.Errorf("describe = %q, want the method, the endpoint and the cause", got)
	}
	if got := describe(errors.New("plain")); got != "plain" {
		t.Errorf("describe(plain) = %q", got)
	}
}

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
