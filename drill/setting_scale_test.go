package drill

import (
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/config"
)

// openDuration returns the open duration the breaker of t runs with, as
// the pipeline builds it: a nil or zero setting takes breaker's default.
func openDuration(t config.Tier) time.Duration {
	var bc breaker.Config
	if b := t.Breaker; b != nil {
		bc.OpenDuration = b.OpenDuration
	}
	return bc.WithDefaults().OpenDuration
}

// TestScaleConfigDefaultDurations: with Speed every duration shaping a
// drill is divided, also those the configuration leaves to their
// defaults (a tier without a breaker block, a breaker without
// open_duration) and the streaming commit_after_duration.
func TestScaleConfigDefaultDurations(t *testing.T) {
	cfg := config.Config{Tiers: []config.Tier{
		{Name: "primary", Kind: config.KindLLM, LLM: config.LLMTier{Models: []string{"p1"}, CommitAfterDuration: time.Second}},
		{Name: "fallback", Kind: config.KindLLM, LLM: config.LLMTier{Models: []string{"f1"}},
			Breaker: &config.Breaker{FailureThreshold: 3}},
		{Name: "set", Kind: config.KindLLM, LLM: config.LLMTier{Models: []string{"s1"}},
			Breaker:  &config.Breaker{OpenDuration: 8 * time.Second},
			Bulkhead: &config.Bulkhead{MaxConcurrent: 1, MaxQueue: 1}},
	}}
	c, err := configFor(cfg, SettingFull)
	if err != nil {
		t.Fatal(err)
	}
	def := openDuration(config.Tier{})
	scaleConfig(&c, 10)
	for i, want := range []time.Duration{def / 10, def / 10, 800 * time.Millisecond} {
		if got := openDuration(c.Tiers[i]); got != want {
			t.Errorf("%s: open duration %v at speed 10, want %v", c.Tiers[i].Name, got, want)
		}
	}
	if got := c.Tiers[2].Bulkhead.QueueTimeout; got != config.DefaultQueueTimeout/10 {
		t.Errorf("default queue_timeout %v at speed 10, want %v", got, config.DefaultQueueTimeout/10)
	}
	if got := c.Tiers[0].LLM.CommitAfterDuration; got != 100*time.Millisecond {
		t.Errorf("commit_after_duration %v at speed 10, want 100ms", got)
	}
	if cfg.Tiers[0].Breaker != nil || cfg.Tiers[1].Breaker.OpenDuration != 0 {
		t.Errorf("the scenario's configuration was modified: %+v", cfg.Tiers)
	}
}
