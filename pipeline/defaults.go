package pipeline

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"time"
)

// Tier kinds of TierConfig.Kind.
const (
	KindSemanticCache = "semantic_cache"
	KindStaleCache    = "stale_cache"
	KindLLM           = "llm"
	KindRetrieval     = "retrieval"
	KindStatic        = "static"
)

// defaultTimeouts holds each tier kind's default timeout.
var defaultTimeouts = map[string]time.Duration{
	KindSemanticCache: 300 * time.Millisecond,
	KindStaleCache:    300 * time.Millisecond,
	KindLLM:           10 * time.Second,
	KindRetrieval:     time.Second,
	KindStatic:        100 * time.Millisecond,
}

// DefaultQueueTimeout is how long a call may wait in a configured
// bulkhead's queue when bulkhead.queue_timeout is not set.
const DefaultQueueTimeout = 2 * time.Second

// Defaults fills the zero fields of c with their documented defaults. It
// leaves set values alone, even bad ones: Validate reports those. The
// models map and the tiers slice are replaced by filled copies, so a
// Config shared with other goroutines (Build's caller's) is not written.
func (c *Config) Defaults() {
	c.Server.Defaults()
	if c.Models != nil {
		models := make(map[string]ModelConfig, len(c.Models))
		for id, m := range c.Models {
			setIfZero(&m.Model, id)
			setIfZero(&m.MaxTokens, 512)
			setIfZero(&m.Cooldown, DefaultCooldown)
			models[id] = m
		}
		c.Models = models
	}
	c.Tiers = slices.Clone(c.Tiers)
	setIfZero(&c.Redis.Prefix, "ragfuse")
	rl := &c.RateLimit
	setIfZero(&rl.OnLimit, OnLimitDegrade)
	if rl.GlobalRPS > 0 {
		setIfZero(&rl.GlobalBurst, burst(0, rl.GlobalRPS))
	}
	if rl.TenantRPS > 0 {
		setIfZero(&rl.TenantBurst, burst(0, rl.TenantRPS))
	}
	llms := 0
	for i := range c.Tiers {
		t := &c.Tiers[i]
		setIfZero(&t.Timeout, defaultTimeouts[t.Kind])
		if t.Bulkhead != nil {
			b := *t.Bulkhead // not the caller's: Build gets its Config by value
			setIfZero(&b.QueueTimeout, DefaultQueueTimeout)
			t.Bulkhead = &b
		}
		switch t.Kind {
		case KindLLM:
			if llms == 0 {
				setIfZero(&t.Source, "primary")
			} else {
				setIfZero(&t.Source, "fallback")
			}
			llms++
			setIfZero(&t.Name, t.Source)
			setIfZero(&t.ContextDocs, 5)
			setIfZero(&t.OnStreamBreak, "note")
		case KindSemanticCache, KindStaleCache:
			setIfZero(&t.Embedder, "hash")
			setIfZero(&t.Similarity, 0.92)
			setIfZero(&t.TTL, 24*time.Hour)
			setIfZero(&t.MaxEntries, 10000)
			if t.Kind == KindSemanticCache && t.StoreFrom == nil {
				t.StoreFrom = []string{"primary"}
			}
		case KindRetrieval:
			setIfZero(&t.TopK, 3)
		}
		if t.Kind == KindSemanticCache {
			setIfZero(&t.Name, "cache")
		}
		setIfZero(&t.Name, t.Kind)
	}
}

// Defaults fills the zero fields of s with their documented defaults.
func (s *ServerConfig) Defaults() {
	setIfZero(&s.Addr, "127.0.0.1:8080")
	setIfZero(&s.RequestTimeout, 12*time.Second)
	setIfZero(&s.MaxQuestionBytes, 4096)
	setIfZero(&s.MaxBodyBytes, 64<<10)
	setIfZero(&s.ShutdownGrace, 15*time.Second)
	setIfZero(&s.DefaultLanguage, "zh")
}

func setIfZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Validate reports every bad value of c (after Defaults) as a *FieldError,
// joined. It does not look at the environment (see CheckEnv).
func (c *Config) Validate() error {
	var v validator
	s := c.Server
	v.check(s.RequestTimeout > 0, "server.request_timeout", "must be > 0")
	v.check(s.MaxQuestionBytes > 0, "server.max_question_bytes", "must be > 0")
	v.check(s.MaxBodyBytes > 0, "server.max_body_bytes", "must be > 0")
	v.check(s.ShutdownGrace >= 0, "server.shutdown_grace", "must be >= 0")
	v.check(s.DrainDelay >= 0, "server.drain_delay", "must be >= 0")
	v.check(s.DefaultLanguage == "zh" || s.DefaultLanguage == "en", "server.default_language", `must be "zh" or "en"`)
	for i, k := range c.Auth.Keys {
		p := fmt.Sprintf("auth.keys[%d]", i)
		v.check(k.KeyEnv != "", p+".key_env", "is required")
		v.check(k.KeyEnv == "" || EnvName(k.KeyEnv), p+".key_env", NotEnvName)
		v.check(k.Tenant != "", p+".tenant", "is required")
	}
	for _, id := range sortedKeys(c.Models) {
		m, p := c.Models[id], "models."+id
		u, err := url.Parse(m.BaseURL)
		v.check(m.BaseURL != "", p+".base_url", "is required")
		v.check(m.BaseURL == "" || err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "",
			p+".base_url", "must be an http or https URL")
		// go-openai appends the endpoint's path to base_url as a string: a
		// query or fragment there would swallow it.
		v.check(err != nil || u.RawQuery == "" && !u.ForceQuery && u.Fragment == "", p+".base_url",
			"must not carry a query or fragment (the endpoint path is appended to it)")
		v.check(m.APIKeyEnv == "" || EnvName(m.APIKeyEnv), p+".api_key_env", NotEnvName)
		v.check(m.MaxTokens > 0, p+".max_tokens", "must be > 0")
		v.check(m.Cooldown > 0, p+".cooldown", "must be > 0")
	}
	rl := c.RateLimit
	v.number(rl.GlobalRPS, rl.GlobalRPS >= 0, "rate_limit.global_rps", "must be >= 0")
	v.number(rl.TenantRPS, rl.TenantRPS >= 0, "rate_limit.tenant_rps", "must be >= 0")
	v.check(rl.GlobalBurst >= 0, "rate_limit.global_burst", "must be >= 0")
	v.check(rl.TenantBurst >= 0, "rate_limit.tenant_burst", "must be >= 0")
	v.check(c.Redis.OpTimeout >= 0, "redis.op_timeout", "must be >= 0")
	v.check(rl.OnLimit == OnLimitDegrade || rl.OnLimit == OnLimitReject, "rate_limit.on_limit", `must be "degrade" or "reject"`)
	v.check(len(c.Tiers) > 0, "tiers", "at least one tier is required")
	names := map[string]bool{}
	for i := range c.Tiers {
		c.validateTier(&v, i, names)
	}
	return v.err()
}

func (c *Config) validateTier(v *validator, i int, names map[string]bool) {
	t, p := c.Tiers[i], fmt.Sprintf("tiers[%d]", i)
	if _, ok := defaultTimeouts[t.Kind]; !ok {
		v.add(p+".kind", fmt.Sprintf("unknown kind %q (want semantic_cache, stale_cache, llm, retrieval or static)", t.Kind))
		return
	}
	v.check(!names[t.Name], p+".name", fmt.Sprintf("%q is used by an earlier tier", t.Name))
	names[t.Name] = true
	v.check(t.Timeout > 0, p+".timeout", "must be > 0")
	v.check(t.Reserve >= 0, p+".reserve", "must be >= 0")
	if b := t.Breaker; b != nil {
		bp := p + ".breaker"
		v.check(b.Window >= 0, bp+".window", "must be >= 0")
		v.check(b.WindowDuration >= 0, bp+".window_duration", "must be >= 0")
		v.check(b.MinimumCalls >= 0, bp+".minimum_calls", "must be >= 0")
		v.number(b.FailureRate, b.FailureRate <= 1, bp+".failure_rate", "must be <= 1 (negative disables it)")
		v.number(b.SlowCallRate, b.SlowCallRate <= 1, bp+".slow_call_rate", "must be <= 1 (negative disables it)")
		v.check(b.SlowCallDuration >= 0, bp+".slow_call_duration", "must be >= 0")
		v.check(b.OpenDuration >= 0, bp+".open_duration", "must be >= 0")
		v.number(b.OpenBackoff, b.OpenBackoff == 0 || b.OpenBackoff >= 1, bp+".open_backoff", "must be >= 1")
		v.check(b.MaxOpenDuration >= 0, bp+".max_open_duration", "must be >= 0")
		v.check(b.HalfOpenMaxCalls >= 0, bp+".half_open_max_calls", "must be >= 0")
		v.check(b.SuccessThreshold >= 0, bp+".success_threshold", "must be >= 0")
	}
	if b := t.Bulkhead; b != nil {
		v.check(b.MaxConcurrent > 0, p+".bulkhead.max_concurrent", "must be > 0")
		v.check(b.MaxQueue >= 0, p+".bulkhead.max_queue", "must be >= 0")
		v.check(b.QueueTimeout >= 0, p+".bulkhead.queue_timeout", "must be >= 0")
	}
	switch t.Kind {
	case KindLLM:
		v.check(len(t.Models) > 0, p+".models", "at least one model is required")
		for j, m := range t.Models {
			_, ok := c.Models[m]
			v.check(ok, fmt.Sprintf("%s.models[%d]", p, j), fmt.Sprintf("unknown model %q (not under models:)", m))
		}
		v.check(t.Source == "primary" || t.Source == "fallback", p+".source", `must be "primary" or "fallback"`)
		v.check(t.ContextDocs >= 0, p+".context_docs", "must be >= 0")
		v.check(t.FirstTokenTimeout >= 0, p+".first_token_timeout", "must be >= 0")
		v.check(t.StallTimeout >= 0, p+".stall_timeout", "must be >= 0")
		v.check(t.CommitAfter >= 0, p+".commit_after", "must be >= 0")
		v.check(t.CommitAfterDuration >= 0, p+".commit_after_duration", "must be >= 0")
		v.check(t.OnStreamBreak == "note" || t.OnStreamBreak == "continue", p+".on_stream_break", `must be "note" or "continue"`)
	case KindSemanticCache, KindStaleCache:
		_, ok := c.Models[t.Embedder]
		v.check(t.Embedder == "hash" || ok, p+".embedder", fmt.Sprintf(`must be "hash" or a model under models:, not %q`, t.Embedder))
		v.number(t.Similarity, t.Similarity > 0 && t.Similarity <= 1, p+".similarity", "must be in (0, 1]")
		v.check(t.TTL > 0, p+".ttl", "must be > 0")
		v.check(t.MaxEntries > 0, p+".max_entries", "must be > 0")
		v.check(t.Grace >= 0, p+".grace", "must be >= 0")
		for j, s := range t.StoreFrom {
			v.check(slices.Contains([]string{"primary", "fallback"}, s), fmt.Sprintf("%s.store_from[%d]", p, j),
				`must be "primary" or "fallback"`)
		}
	case KindRetrieval:
		v.check(t.TopK > 0, p+".top_k", "must be > 0")
	}
}

// CheckEnv reports models whose api_key_env names a variable that getenv
// (nil: os.Getenv) finds empty. The values are never part of an error.
func (c *Config) CheckEnv(getenv func(string) string) error {
	getenv = orGetenv(getenv)
	var v validator
	for _, id := range sortedKeys(c.Models) {
		// A value that is no variable name (Validate refuses it) may be
		// the key itself: it must not reach an error or a log.
		if name := c.Models[id].APIKeyEnv; name != "" && EnvName(name) {
			v.check(getenv(name) != "", "models."+id+".api_key_env",
				fmt.Sprintf("environment variable %s is not set", name))
		}
	}
	return v.err()
}

// NotEnvName is the message for a key_env or api_key_env that is not a
// variable name (see EnvName). It does not repeat the value, which may be
// a key pasted in by mistake.
const NotEnvName = "must be the name of an environment variable (letters, digits, _), not the key itself"

// EnvName reports whether s looks like an environment variable name:
// letters, digits and underscores, not starting with a digit.
func EnvName(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

// validator collects field errors.
type validator struct{ errs []error }

func (v *validator) add(path, msg string) { v.errs = append(v.errs, &FieldError{Path: path, Msg: msg}) }

func (v *validator) check(ok bool, path, msg string) {
	if !ok {
		v.add(path, msg)
	}
}

// number checks a float field: x must be finite (YAML's .inf and .nan
// decode as floats), and then ok.
func (v *validator) number(x float64, ok bool, path, msg string) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		v.add(path, "must be a finite number")
		return
	}
	v.check(ok, path, msg)
}

func (v *validator) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	return errors.Join(v.errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
