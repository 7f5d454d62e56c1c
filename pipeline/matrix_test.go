package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// faultCase is one upstream fault and what the pipeline must make of it.
type faultCase struct {
	name  string
	fault llmtest.Fault
	kind  tiers.Kind // the attempt's outcome
	trips bool       // a failure for the breakers (else ignored)
	cools bool       // the model cools down (429)
}

var faultCases = []faultCase{
	{"latency past timeout", llmtest.Fault{Mode: llmtest.ModeLatency, Delay: 2 * time.Second}, tiers.KindTimeout, true, false},
	{"hang", llmtest.Fault{Mode: llmtest.ModeHang}, tiers.KindTimeout, true, false},
	{"status 500", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500}, tiers.KindServer, true, false},
	{"status 503", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503, Body: "upstream unavailable"}, tiers.KindServer, true, false},
	{"status 401", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 401}, tiers.KindAuth, true, false},
	{"400 context length", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 400,
		Body: `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`}, tiers.KindContextLength, false, false},
	{"rate limit", llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: 10 * time.Second}, tiers.KindRateLimited, false, true},
	{"reset", llmtest.Fault{Mode: llmtest.ModeReset}, tiers.KindConnection, true, false},
	{"malformed", llmtest.Fault{Mode: llmtest.ModeMalformed}, tiers.KindMalformed, true, false},
	{"empty", llmtest.Fault{Mode: llmtest.ModeEmpty}, tiers.KindEmpty, true, false},
}

// TestFaultMatrix injects each fault into each model tier and checks who
// answers, the breakers, and how many calls reach the faulty model: after
// a trip none until the open duration passes, then exactly one probe.
func TestFaultMatrix(t *testing.T) {
	type tierCase struct {
		tier, model string
		next        tiers.Source // who answers when this tier fails
	}
	for _, tc := range []tierCase{{"primary", bigModel, tiers.SourceFallback}, {"fallback", smallModel, tiers.SourceRetrieval}} {
		for _, fc := range faultCases {
			t.Run(tc.tier+"/"+fc.name, func(t *testing.T) {
				r := newRig(t, Options{})
				if tc.tier == "fallback" { // the primary is down for good: questions reach the fallback
					r.srv.SetFault(bigModel, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 502})
				}
				r.srv.SetFault(tc.model, fc.fault)
				calls := func() int64 { return r.srv.Stats(tc.model).Calls }
				tierBreaker, modelBreaker := "tier/"+tc.tier, "model/"+tc.model

				// The first question: the faulty tier is tried, the next answers.
				res := r.ask(t, "How do I return an item?")
				if res.Source != tc.next {
					t.Fatalf("answered by %s, want %s (%v)", res.Source, tc.next, outcomes(res))
				}
				if want := fmt.Sprintf("%s/%s:%s", tc.tier, tc.model, fc.kind); !contains(outcomes(res), want) {
					t.Fatalf("attempts %v lack %s", outcomes(res), want)
				}
				if calls() != 1 {
					t.Fatalf("%d upstream calls, want 1", calls())
				}

				switch {
				case fc.trips:
					r.ask(t, "q2") // the second failure trips both breakers
					if r.state(tierBreaker) != breaker.StateOpen || r.state(modelBreaker) != breaker.StateOpen {
						t.Fatalf("breakers %v/%v after 2 failures, want open", r.state(tierBreaker), r.state(modelBreaker))
					}
					for i := range 5 {
						res = r.ask(t, fmt.Sprint("open ", i))
						if res.Source != tc.next || !contains(outcomes(res), tc.tier+":breaker_open") {
							t.Fatalf("while open: %s %v", res.Source, outcomes(res))
						}
					}
					if calls() != 2 {
						t.Fatalf("%d upstream calls while open, want 2", calls())
					}
					r.clk.Advance(openFor - time.Second)
					r.ask(t, "still open")
					if calls() != 2 {
						t.Fatal("a call reached the model before the open duration passed")
					}
					r.clk.Advance(time.Second)
					r.ask(t, "probe")
					if calls() != 3 || r.state(modelBreaker) != breaker.StateOpen {
						t.Fatalf("after the failed probe: %d calls, model breaker %v", calls(), r.state(modelBreaker))
					}
					r.ask(t, "reopened")
					if calls() != 3 {
						t.Fatalf("%d calls after the failed probe re-opened the breaker", calls())
					}
					// Healed: the next probe closes the breakers and the tier answers again.
					r.srv.ClearFault(tc.model)
					r.clk.Advance(openFor)
					if res = r.ask(t, "healed"); res.Source != tiers.Source(tc.tier) || calls() != 4 {
						t.Fatalf("healed: %s %v, %d calls", res.Source, outcomes(res), calls())
					}
					if r.state(tierBreaker) != breaker.StateClosed || r.state(modelBreaker) != breaker.StateClosed {
						t.Fatal("breakers not closed after a good probe")
					}
				case fc.cools:
					for range 3 {
						if res = r.ask(t, "again"); !contains(outcomes(res), fmt.Sprintf("%s/%s:%s", tc.tier, tc.model, outcomeCoolingDown)) {
							t.Fatalf("while cooling: %v", outcomes(res))
						}
					}
					if calls() != 1 {
						t.Fatalf("%d calls while cooling down, want 1", calls())
					}
					r.clk.Advance(10 * time.Second)
					r.ask(t, "after")
					if calls() != 2 || r.state(modelBreaker) != breaker.StateClosed || r.state(tierBreaker) != breaker.StateClosed {
						t.Fatalf("after the cooldown: %d calls, breakers %v/%v", calls(), r.state(tierBreaker), r.state(modelBreaker))
					}
				default: // the question's fault: no harm to the breakers, no cooldown
					for i := range 4 {
						if res = r.ask(t, fmt.Sprint("again ", i)); res.Source != tc.next {
							t.Fatalf("answered by %s", res.Source)
						}
					}
					if calls() != 5 || r.state(modelBreaker) != breaker.StateClosed || r.state(tierBreaker) != breaker.StateClosed {
						t.Fatalf("%d calls, breakers %v/%v", calls(), r.state(tierBreaker), r.state(modelBreaker))
					}
				}
			})
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
