package drill

import (
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/pipeline"
)

// openDuration returns the open duration the breaker of t runs with, as
// the pipeline builds it: a nil or zero setting takes breaker's default.
func openDuration(t pipeline.TierConfig) time.Duration {
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
	cfg := pipeline.Config{Tiers: []pipeline.TierConfig{
		{Name: "primary", Kind: pipeline.KindLLM, Models: []string{"p1"}, CommitAfterDuration: time.Second},
		{Name: "fallback", Kind: pipeline.KindLLM, Models: []string{"f1"},
			Breaker: &pipeline.BreakerConfig{FailureThreshold: 3}},
		{Name: "set", Kind: pipeline.KindLLM, Models: []string{"s1"},
			Breaker:  &pipeline.BreakerConfig{OpenDuration: 8 * time.Second},
			Bulkhead: &pipeline.BulkheadConfig{MaxConcurrent: 1, MaxQueue: 1}},
	}}
	c, err := configFor(cfg, SettingFull)
	if err != nil {
		t.Fatal(err)
	}
	def := openDuration(pipeline.TierConfig{})
	scaleConfig(&c, 10)
	for i, want := range []time.Duration{def / 10, def / 10, 800 * time.Millisecond} {
		if got := openDuration(c.Tiers[i]); got != want {
			t.Errorf("%s: open duration %v at speed 10, want %v", c.Tiers[i].Name, got, want)
		}
	}
	if got := c.Tiers[2].Bulkhead.QueueTimeout; got != pipeline.DefaultQueueTimeout/10 {
		t.Errorf("default queue_timeout %v at speed 10, want %v", got, pipeline.DefaultQueueTimeout/10)
	}
	if got := c.Tiers[0].CommitAfterDuration; got != 100*time.Millisecond {
		t.Errorf("commit_after_duration %v at speed 10, want 100ms", got)
	}
	if cfg.Tiers[0].Breaker != nil || cfg.Tiers[1].Breaker.OpenDuration != 0 {
		t.Errorf("the scenario's configuration was modified: %+v", cfg.Tiers)
	}
}
