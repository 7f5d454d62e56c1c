package drill

import (
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// TestFirstWave plays the first 15 s of the first-wave outage, compressed,
// under full and hedged: without hedging the questions asked as the
// primary hangs wait for its 15 s timeout; hedged at 2.5 s they are
// answered by the fallback a few hundred milliseconds later, the breaker
// trips as soon, and no healthy question is hedged.
func TestFirstWave(t *testing.T) {
	r := runScenarioFor(t, "first-wave", 35*time.Second, SettingFull, SettingHedged)
	full, hedged := r.Settings[0].FirstWave, r.Settings[1].FirstWave
	if full == nil || hedged == nil {
		t.Fatal("no first-wave figures in a scenario that hedges")
	}
	if full.HedgeAfter != 0 || hedged.HedgeAfter != 2500*time.Millisecond {
		t.Errorf("hedge_after: full %v, hedged %v", full.HedgeAfter, hedged.HedgeAfter)
	}
	// Real-time jitter is multiplied by the speed: the bar leaves room.
	if hedged.Latency.P99 > 5*time.Second || full.Latency.P99 < 14*time.Second {
		t.Errorf("first 10 s p99: hedged %v (want about 3 s), full %v (want the 15 s timeout)", hedged.Latency.P99, full.Latency.P99)
	}
	inFlight := testRate() * 1.2 // the primary's latency times the rate
	if f := float64(hedged.InFlight); f < 0.7*inFlight || f > 1.3*inFlight {
		t.Errorf("%d calls in flight when the outage began, want about %.0f", hedged.InFlight, inFlight)
	}
	// Calls in flight past slow_call_duration, and the hedges' losers,
	// are slow: the breaker trips while the hung calls are in flight, long
	// before they time out; hedging does not delay it.
	if hedged.TripAt == 0 || hedged.TripAt > 30*time.Second || full.TripAt != 0 && hedged.TripAt > full.TripAt+time.Second {
		t.Errorf("trips: hedged at %v after %d calls, full at %v after %d", hedged.TripAt, hedged.CallsToTrip, full.TripAt, full.CallsToTrip)
	}
	if hedged.HealthyQuestions == 0 || float64(hedged.HealthyHedges) > goalHedgeOverhead*float64(hedged.HealthyQuestions) {
		t.Errorf("%d hedges over %d healthy questions", hedged.HealthyHedges, hedged.HealthyQuestions)
	}
	if g := goal(t, r.Settings[1], "extra calls from hedging while healthy"); !g.Met {
		t.Errorf("hedged: %s, want %s", g.Got, g.Want)
	}
	goal(t, r.Settings[0], "p99 of the questions asked in the first 10 s of the outage")
	goal(t, r.Settings[0], "calls to the failing model from the outage's start to the trip")
	if g := goal(t, r.Settings[1], "calls to a failing model per open period"); !g.Unmeasured {
		t.Errorf("the per-period bar of a trip by failures is judged on a hang: %+v", g)
	}
}

// TestFailingTokensAreTheAttempts: with the pipeline's model calls seen,
// a failing model's prompt tokens are the prompts its calls reported
// while it failed (the provider's usage, else the estimate), not the
// healthy mean; its completions are the upstream's count.
func TestFailingTokensAreTheAttempts(t *testing.T) {
	windows := []Window{{Model: "p1", Start: 10 * time.Second, End: 20 * time.Second}}
	segs := []segment{
		{model: "p1", stats: llmtest.Stats{Calls: 10, PromptTokens: 1000, CompletionTokens: 500}},
		{model: "p1", failing: true, stats: llmtest.Stats{Calls: 3, Faulted: 3, CompletionTokens: 7}},
	}
	calls := []modelCall{
		{model: "p1", start: 5 * time.Second, prompt: 100},  // healthy: in its segment's count
		{model: "p1", start: 11 * time.Second, prompt: 140}, // failing: estimated
		{model: "p1", start: 12 * time.Second, prompt: 150},
		{model: "p1", start: 13 * time.Second, prompt: 160},
	}
	failCalls, failTokens, total := tokens(segs, calls, windows)
	if failCalls != 3 || failTokens != 450+7 || total != 1500+457 {
		t.Fatalf("failing calls %d, tokens %d, total %d; want 3, 457, 1957", failCalls, failTokens, total)
	}
	// Without the pipeline's calls, the healthy mean stands in.
	if _, failTokens, _ := tokens(segs, nil, windows); failTokens != 3*100+7 {
		t.Fatalf("failing tokens without calls %d, want 307", failTokens)
	}
}
