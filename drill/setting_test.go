package drill

import (
	"testing"

	"github.com/ragfuse/ragfuse/config"
)

// TestBreakerLimit checks the calls a model's breaker lets through per
// open period, from its tier's breaker as the breaker runs it.
func TestBreakerLimit(t *testing.T) {
	cfg := config.Config{Tiers: []config.Tier{
		{Name: "cache", Kind: config.KindSemanticCache},
		{Name: "primary", Kind: config.KindLLM, LLM: config.LLMTier{Models: []string{"p1"}}},
		{Name: "fallback", Kind: config.KindLLM, LLM: config.LLMTier{Models: []string{"f1", "f2"}},
			Breaker: &config.Breaker{FailureThreshold: 5, HalfOpenMaxCalls: 2}},
		{Name: "never", Kind: config.KindLLM, LLM: config.LLMTier{Models: []string{"n1"}},
			Breaker: &config.Breaker{FailureThreshold: -1}},
	}}
	for model, want := range map[string]int{"p1": 3, "f2": 7, "n1": 1, "other": 0} {
		if got := breakerLimit(cfg, model); got != want {
			t.Errorf("breakerLimit(%s) = %d, want %d", model, got, want)
		}
	}
}
