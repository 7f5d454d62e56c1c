package config

import (
	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// stage returns the pipeline stage of tier t, built from tc, with its
// breakers on store.
func stage(t tiers.Tier, tc Tier, store breaker.Store) pipeline.Stage {
	s := pipeline.Stage{
		Tier:    t,
		Timeout: tc.Timeout,
		Reserve: tc.Reserve,
		Breaker: breakerConfig(tc.Breaker, store),
		Model:   tc.Kind == KindLLM,
		// Hedging, an llm tier's.
		HedgeAfter:  tc.LLM.HedgeAfter,
		HedgeBudget: tc.LLM.HedgeBudget,
		Stream: pipeline.StreamConfig{
			FirstTokenTimeout:   tc.LLM.FirstTokenTimeout,
			StallTimeout:        tc.LLM.StallTimeout,
			CommitAfter:         tc.LLM.CommitAfter,
			CommitAfterDuration: tc.LLM.CommitAfterDuration,
			ContinueOnBreak:     tc.LLM.OnStreamBreak == onBreakContinue,
			ContinuePrompt:      tc.LLM.ContinuePrompt,
		},
	}
	if b := tc.Bulkhead; b != nil {
		s.Bulkhead = &pipeline.BulkheadConfig{MaxConcurrent: b.MaxConcurrent, MaxQueue: b.MaxQueue, QueueTimeout: b.QueueTimeout}
	}
	return s
}

// breakerConfig turns the YAML form into a breaker.Config.
func breakerConfig(c *Breaker, store breaker.Store) breaker.Config {
	out := breaker.Config{Store: store}
	if c == nil {
		return out
	}
	out.FailureThreshold = c.FailureThreshold
	out.Window = c.Window
	out.WindowDuration = c.WindowDuration
	out.MinimumCalls = c.MinimumCalls
	out.FailureRate = c.FailureRate
	out.SlowCallDuration = c.SlowCallDuration
	out.SlowCallRate = c.SlowCallRate
	out.OpenDuration = c.OpenDuration
	out.OpenBackoff = c.OpenBackoff
	out.MaxOpenDuration = c.MaxOpenDuration
	out.HalfOpenMaxCalls = c.HalfOpenMaxCalls
	out.SuccessThreshold = c.SuccessThreshold
	return out
}

// rateLimit turns the YAML form into a pipeline.RateLimitConfig.
func rateLimit(c RateLimit) pipeline.RateLimitConfig {
	return pipeline.RateLimitConfig{GlobalRPS: c.GlobalRPS, GlobalBurst: c.GlobalBurst,
		TenantRPS: c.TenantRPS, TenantBurst: c.TenantBurst, Reject: c.OnLimit == onLimitReject}
}
