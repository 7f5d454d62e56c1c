package drill

import (
	"testing"

	"github.com/ragfuse/ragfuse/pipeline"
)

// TestBreakerLimit checks the calls a model's breaker lets through per
// open period, from its tier's breaker as the breaker runs it.
func TestBreakerLimit(t *testing.T) {
	cfg := pipeline.Config{Tiers: []pipeline.TierConfig{
		{Name: "cache", Kind: pipeline.KindSemanticCache},
		{Name: "primary", Kind: pipeline.KindLLM, Models: []string{"p1"}},
		{Name: "fallback", Kind: pipeline.KindLLM, Models: []string{"f1", "f2"},
			Breaker: &pipeline.BreakerConfig{FailureThreshold: 5, HalfOpenMaxCalls: 2}},
		{Name: "never", Kind: pipeline.KindLLM, Models: []string{"n1"},
			Breaker: &pipeline.BreakerConfig{FailureThreshold: -1}},
	}}
	for model, want := range map[string]int{"p1": 3, "f2": 7, "n1": 1, "other": 0} {
		if got := breakerLimit(cfg, model); got != want {
			t.Errorf("breakerLimit(%s) = %d, want %d", model, got, want)
		}
	}
}
