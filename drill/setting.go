package drill

import (
	"fmt"
	"slices"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/config"
)

// The protection settings.
const (
	SettingNone    = "none"
	SettingBreaker = "breaker"
	SettingFull    = "full"
	SettingHedged  = "hedged" // full with the configured hedge_after
	SettingTarget  = "target" // a running server driven over HTTP
)

// DefaultSettings are the settings Run plays when Options.Settings is
// empty, in this order; SettingHedged follows them when the scenario's
// configuration hedges a tier.
var DefaultSettings = []string{SettingNone, SettingBreaker, SettingFull}

// AllSettings are the settings Options.Settings may name.
var AllSettings = []string{SettingNone, SettingBreaker, SettingFull, SettingHedged}

// defaultSettings returns the settings Run plays for sc by default.
func defaultSettings(sc *Scenario) []string {
	if hedgeOf(sc.Config) > 0 {
		return AllSettings
	}
	return DefaultSettings
}

// noReserve is the reserve given to every tier when the budget is off: the
// pipeline reads a zero reserve as "the default", so the smallest positive
// one stands for none.
const noReserve = time.Nanosecond

// configFor returns a copy of cfg (defaults filled) transformed for the
// protection setting:
//
//	none     cache tiers removed; breakers that never trip; no bulkheads,
//	         no rate limits, no budget reserve, no hedging
//	breaker  as none, but with the configured (or default) breakers
//	full     cfg as it is, but no hedging
//	hedged   cfg as it is
func configFor(cfg config.Config, setting string) (config.Config, error) {
	c := cloneConfig(cfg)
	c.Defaults()
	switch setting {
	case SettingHedged:
		return c, nil
	case SettingNone, SettingBreaker, SettingFull:
	default:
		return c, fmt.Errorf("drill: unknown setting %q (want none, breaker, full or hedged)", setting)
	}
	for i := range c.Tiers {
		c.Tiers[i].LLM.HedgeAfter = 0
	}
	if setting == SettingFull {
		return c, nil
	}
	c.RateLimit = config.RateLimit{OnLimit: c.RateLimit.OnLimit}
	c.Tiers = slices.DeleteFunc(c.Tiers, func(t config.Tier) bool {
		return t.Kind == config.KindSemanticCache || t.Kind == config.KindStaleCache
	})
	for i := range c.Tiers {
		t := &c.Tiers[i]
		t.Bulkhead = nil
		t.Reserve = noReserve
		if setting == SettingNone {
			t.Breaker = &config.Breaker{FailureThreshold: -1, FailureRate: -1, SlowCallRate: -1}
		}
	}
	return c, nil
}

// cloneConfig copies the parts of cfg that configFor and scaleConfig
// change.
func cloneConfig(cfg config.Config) config.Config {
	c := cfg
	c.Models = make(map[string]config.Model, len(cfg.Models))
	for k, m := range cfg.Models {
		c.Models[k] = m
	}
	c.Tiers = slices.Clone(cfg.Tiers)
	for i := range c.Tiers {
		t := &c.Tiers[i]
		if t.Breaker != nil {
			b := *t.Breaker
			t.Breaker = &b
		}
		if t.Bulkhead != nil {
			b := *t.Bulkhead
			t.Bulkhead = &b
		}
	}
	return c
}

// scaleConfig divides every duration of c that shapes a drill by speed
// and multiplies its rates by speed. c must be a clone.
func scaleConfig(c *config.Config, speed float64) {
	if speed == 1 {
		return
	}
	d := func(p *time.Duration) { *p = scaleDur(*p, speed) }
	d(&c.Server.RequestTimeout)
	for k, m := range c.Models {
		d(&m.Cooldown)
		c.Models[k] = m
	}
	c.RateLimit.GlobalRPS *= speed
	c.RateLimit.TenantRPS *= speed
	for i := range c.Tiers {
		t := &c.Tiers[i]
		if t.Reserve != noReserve {
			d(&t.Reserve)
		}
		for _, p := range []*time.Duration{&t.Timeout, &t.LLM.FirstTokenTimeout, &t.LLM.StallTimeout, &t.LLM.CommitAfterDuration, &t.LLM.HedgeAfter,
			&t.Cache.TTL, &t.Cache.Grace} {
			d(p)
		}
		// Every tier has a breaker; a missing block or open_duration runs
		// with breaker's default, which must be scaled too.
		if t.Breaker == nil {
			t.Breaker = &config.Breaker{}
		}
		b := t.Breaker
		if b.OpenDuration == 0 {
			b.OpenDuration = breaker.Config{}.WithDefaults().OpenDuration
		}
		for _, p := range []*time.Duration{&b.WindowDuration, &b.SlowCallDuration, &b.OpenDuration, &b.MaxOpenDuration} {
			d(p)
		}
		if b := t.Bulkhead; b != nil {
			if b.QueueTimeout == 0 {
				b.QueueTimeout = config.DefaultQueueTimeout // scaled like the rest
			}
			d(&b.QueueTimeout)
		}
	}
}

// scaleDur divides d by speed, keeping a positive d positive.
func scaleDur(d time.Duration, speed float64) time.Duration {
	if d <= 0 || speed == 1 {
		return d
	}
	return max(time.Duration(float64(d)/speed), 1)
}

// breakerLimit returns failure_threshold + half_open_max_calls, as the
// breaker runs them, of the first llm tier naming model.
func breakerLimit(c config.Config, model string) int {
	for _, t := range c.Tiers {
		if t.Kind != config.KindLLM || !slices.Contains(t.LLM.Models, model) {
			continue
		}
		var bc breaker.Config
		if b := t.Breaker; b != nil {
			bc.FailureThreshold, bc.HalfOpenMaxCalls = b.FailureThreshold, b.HalfOpenMaxCalls
		}
		bc = bc.WithDefaults()
		return max(bc.FailureThreshold, 0) + bc.HalfOpenMaxCalls
	}
	return 0
}

// fallbackTier returns the name of the first llm tier whose source is
// fallback, or "".
func fallbackTier(c config.Config) string {
	for _, t := range c.Tiers {
		if t.Kind == config.KindLLM && t.LLM.Source == "fallback" {
			return t.Name
		}
	}
	return ""
}
