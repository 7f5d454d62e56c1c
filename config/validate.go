package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"slices"
)

// Validate reports every bad value of c (after Defaults) as a *FieldError,
// joined. It does not look at the environment (see CheckEnv).
func (c *Config) Validate() error {
	var v validator
	s := c.Server
	v.check(s.RequestTimeout > 0, "server.request_timeout", "must be > 0")
	// Zero is the server's default for the limits below.
	v.check(s.MaxQuestionBytes >= 0, "server.max_question_bytes", "must be > 0")
	v.check(s.MaxBodyBytes >= 0, "server.max_body_bytes", "must be > 0")
	v.check(s.ShutdownGrace >= 0, "server.shutdown_grace", "must be >= 0")
	v.check(s.DrainDelay >= 0, "server.drain_delay", "must be >= 0")
	v.check(slices.Contains([]string{"", "zh", "en"}, s.DefaultLanguage), "server.default_language", `must be "zh" or "en"`)
	v.check(s.MaxHistoryTurns >= 0, "server.max_history_turns", "must be > 0")
	v.check(s.MaxHistoryBytes >= 0, "server.max_history_bytes", "must be > 0")
	v.check(s.ReadTimeout >= 0, "server.read_timeout", "must be > 0")
	v.check(s.IdleTimeout >= 0, "server.idle_timeout", "must be > 0")
	v.check(s.MaxConnections >= 0, "server.max_connections", "must be > 0")
	if cd := c.KnowledgeBase.Condense; cd != nil {
		m, ok := c.Models[cd.Model]
		v.check(cd.Model != "", "knowledge_base.condense.model", "is required")
		v.check(cd.Model == "" || ok, "knowledge_base.condense.model", fmt.Sprintf("unknown model %q (not under models:)", cd.Model))
		v.check(!ok || m.Kind == ModelChat, "knowledge_base.condense.model", fmt.Sprintf("model %q is of kind %q, not chat", cd.Model, m.Kind))
		v.check(cd.Timeout > 0, "knowledge_base.condense.timeout", "must be > 0")
	}
	v.check(c.KnowledgeBase.Timeout > 0, "knowledge_base.timeout", "must be > 0")
	c.validateAuth(&v)
	r := c.Redis
	v.check(r.URL == "" || r.URLEnv == "", "redis.url_env", "set redis.url or redis.url_env, not both")
	v.check(r.URLEnv == "" || EnvName(r.URLEnv), "redis.url_env", NotEnvName)
	for _, id := range sortedKeys(c.Models) {
		c.validateModel(&v, id)
	}
	c.validateKnowledgeBase(&v)
	rl := c.RateLimit
	v.number(rl.GlobalRPS, rl.GlobalRPS >= 0, "rate_limit.global_rps", "must be >= 0")
	v.number(rl.TenantRPS, rl.TenantRPS >= 0, "rate_limit.tenant_rps", "must be >= 0")
	v.check(rl.GlobalBurst >= 0, "rate_limit.global_burst", "must be >= 0")
	v.check(rl.TenantBurst >= 0, "rate_limit.tenant_burst", "must be >= 0")
	v.check(c.Redis.OpTimeout >= 0, "redis.op_timeout", "must be >= 0")
	c.validateTracing(&v)
	v.check(rl.OnLimit == onLimitDegrade || rl.OnLimit == onLimitReject,
		"rate_limit.on_limit", `must be "degrade" or "reject"`)
	v.check(len(c.Tiers) > 0, "tiers", "at least one tier is required")
	names := map[string]bool{}
	for i := range c.Tiers {
		c.validateTier(&v, i, names)
	}
	return v.err()
}

// validateTracing checks the tracing: section.
func (c *Config) validateTracing(v *validator) {
	t := c.Tracing
	if t.OTLPEndpoint != "" {
		u, err := url.Parse(t.OTLPEndpoint)
		v.check(err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
			u.RawQuery == "" && u.Fragment == "", "tracing.otlp_endpoint",
			"must be an http or https URL without user, query or fragment, e.g. http://127.0.0.1:4318")
	}
	v.number(t.SampleRatio, t.SampleRatio > 0 && t.SampleRatio <= 1, "tracing.sample_ratio",
		"must be in (0, 1]; to trace nothing, leave tracing.otlp_endpoint empty")
}

func (c *Config) validateAuth(v *validator) {
	for i, k := range c.Auth.Keys {
		p := fmt.Sprintf("auth.keys[%d]", i)
		v.check(k.KeyEnv != "", p+".key_env", "is required")
		v.check(k.KeyEnv == "" || EnvName(k.KeyEnv), p+".key_env", NotEnvName)
		v.check(k.Tenant != "", p+".tenant", "is required")
	}
	names := map[string]bool{}
	for i, k := range c.Auth.AdminKeys {
		p := fmt.Sprintf("auth.admin_keys[%d]", i)
		v.check(k.KeyEnv != "", p+".key_env", "is required")
		v.check(k.KeyEnv == "" || EnvName(k.KeyEnv), p+".key_env", NotEnvName)
		v.check(tenantName.MatchString(k.Name), p+".name", "must be 1-64 characters of A-Z a-z 0-9 _ . -")
		v.check(!names[k.Name], p+".name", fmt.Sprintf("%q names an earlier admin key", k.Name))
		names[k.Name] = true
	}
}

func (c *Config) validateModel(v *validator, id string) {
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
	v.check(m.Kind == ModelChat || m.Kind == ModelEmbedding || m.Kind == ModelRerank, p+".kind",
		fmt.Sprintf(`must be "chat", "embedding" or "rerank", not %q`, m.Kind))
	v.check(m.MaxTokens > 0, p+".max_tokens", "must be > 0")
	v.check(m.Cooldown > 0, p+".cooldown", "must be > 0")
	if pr := m.Probe; pr != nil {
		v.check(pr.Interval > 0, p+".probe.interval", "must be > 0")
		v.check(pr.Timeout > 0, p+".probe.timeout", "must be > 0")
		v.check(pr.Timeout <= pr.Interval, p+".probe.timeout", "must be <= probe.interval")
	}
}

// tierFields are the fields of a Tier, with the kinds each is valid on.
var tierFields = yamlFields(reflect.TypeOf(Tier{}))

func (c *Config) validateTier(v *validator, i int, names map[string]bool) {
	t, p := c.Tiers[i], fmt.Sprintf("tiers[%d]", i)
	if _, ok := defaultTimeouts[t.Kind]; !ok {
		v.add(p+".kind", fmt.Sprintf("unknown kind %q (want semantic_cache, stale_cache, llm, retrieval or static)", t.Kind))
		return
	}
	for _, name := range tierFields.foreign(reflect.ValueOf(t), t.Kind) {
		v.add(p+"."+name, notOfKind(t.Kind))
	}
	v.check(!names[t.Name], p+".name", fmt.Sprintf("%q is used by an earlier tier", t.Name))
	names[t.Name] = true
	v.check(t.Timeout > 0, p+".timeout", "must be > 0")
	v.check(t.Reserve >= 0, p+".reserve", "must be >= 0")
	if b := t.Breaker; b != nil {
		validateBreaker(v, b, p+".breaker")
	}
	if b := t.Bulkhead; b != nil {
		v.check(b.MaxConcurrent > 0, p+".bulkhead.max_concurrent", "must be > 0")
		v.check(b.MaxQueue >= 0, p+".bulkhead.max_queue", "must be >= 0")
		v.check(b.QueueTimeout >= 0, p+".bulkhead.queue_timeout", "must be >= 0")
	}
	switch t.Kind {
	case KindLLM:
		c.validateLLM(v, t.LLM, p)
		v.check(t.LLM.HedgeAfter <= 0 || c.llmAfter(i), p+".hedge_after", "needs a later llm tier to hedge with")
	case KindSemanticCache, KindStaleCache:
		c.validateCache(v, t.Cache, p)
	case KindRetrieval:
		v.check(t.Retrieval.TopK > 0, p+".top_k", "must be > 0")
	}
}

func validateBreaker(v *validator, b *Breaker, p string) {
	v.check(b.Window >= 0, p+".window", "must be >= 0")
	v.check(b.WindowDuration >= 0, p+".window_duration", "must be >= 0")
	v.check(b.MinimumCalls >= 0, p+".minimum_calls", "must be >= 0")
	v.number(b.FailureRate, b.FailureRate <= 1, p+".failure_rate", "must be <= 1 (negative disables it)")
	v.number(b.SlowCallRate, b.SlowCallRate <= 1, p+".slow_call_rate", "must be <= 1 (negative disables it)")
	v.check(b.SlowCallDuration >= 0, p+".slow_call_duration", "must be >= 0")
	v.check(b.OpenDuration >= 0, p+".open_duration", "must be >= 0")
	v.number(b.OpenBackoff, b.OpenBackoff == 0 || b.OpenBackoff >= 1, p+".open_backoff", "must be >= 1")
	v.check(b.MaxOpenDuration >= 0, p+".max_open_duration", "must be >= 0")
	v.check(b.HalfOpenMaxCalls >= 0, p+".half_open_max_calls", "must be >= 0")
	v.check(b.SuccessThreshold >= 0, p+".success_threshold", "must be >= 0")
}

func (c *Config) validateKnowledgeBase(v *validator) {
	kb := c.KnowledgeBase
	v.number(kb.MinRelevance, true, "knowledge_base.min_relevance", "")
	rr := kb.Rerank
	if rr == nil {
		return
	}
	m, ok := c.Models[rr.Model]
	switch {
	case rr.Model == "":
		v.add("knowledge_base.rerank.model", "is required")
	case !ok:
		v.add("knowledge_base.rerank.model", fmt.Sprintf("unknown model %q (not under models:)", rr.Model))
	default:
		v.check(m.Kind == ModelRerank, "knowledge_base.rerank.model",
			fmt.Sprintf("model %q is of kind %q, not rerank", rr.Model, m.Kind))
	}
	v.check(rr.Candidates > 0, "knowledge_base.rerank.candidates", "must be > 0")
	v.check(rr.Timeout > 0, "knowledge_base.rerank.timeout", "must be > 0")
	v.number(rr.MinScore, true, "knowledge_base.rerank.min_score", "")
}

func (c *Config) validateLLM(v *validator, t LLMTier, p string) {
	v.check(len(t.Models) > 0, p+".models", "at least one model is required")
	for j, m := range t.Models {
		mc, ok := c.Models[m]
		path := fmt.Sprintf("%s.models[%d]", p, j)
		v.check(ok, path, fmt.Sprintf("unknown model %q (not under models:)", m))
		v.check(!ok || mc.Kind == ModelChat, path, fmt.Sprintf("model %q is of kind %q, not chat", m, mc.Kind))
	}
	v.check(t.Source == "primary" || t.Source == "fallback", p+".source", `must be "primary" or "fallback"`)
	v.check(t.ContextDocs >= 0, p+".context_docs", "must be >= 0")
	v.check(t.HistoryTurns == nil || *t.HistoryTurns >= 0, p+".history_turns", "must be >= 0")
	v.check(t.FirstTokenTimeout >= 0, p+".first_token_timeout", "must be >= 0")
	v.check(t.StallTimeout >= 0, p+".stall_timeout", "must be >= 0")
	v.check(t.CommitAfter >= 0, p+".commit_after", "must be >= 0")
	v.check(t.CommitAfterDuration >= 0, p+".commit_after_duration", "must be >= 0")
	v.check(t.OnStreamBreak == onBreakNote || t.OnStreamBreak == onBreakContinue,
		p+".on_stream_break", `must be "note" or "continue"`)
	v.check(t.HedgeAfter >= 0, p+".hedge_after", "must be >= 0")
	v.number(t.HedgeBudget, t.HedgeBudget > 0 && t.HedgeBudget <= 1, p+".hedge_budget", "must be in (0, 1]")
}

// llmAfter reports whether an llm tier follows tier i.
func (c *Config) llmAfter(i int) bool {
	for _, t := range c.Tiers[i+1:] {
		if t.Kind == KindLLM {
			return true
		}
	}
	return false
}

func (c *Config) validateCache(v *validator, t CacheTier, p string) {
	m, ok := c.Models[t.Embedder]
	v.check(t.Embedder == hashEmbedder || ok, p+".embedder",
		fmt.Sprintf(`must be "hash" or a model under models:, not %q`, t.Embedder))
	v.check(!ok || m.Kind != ModelRerank, p+".embedder", fmt.Sprintf("model %q is of kind rerank, not embedding", t.Embedder))
	v.number(t.Similarity, t.Similarity > 0 && t.Similarity <= 1, p+".similarity", "must be in (0, 1]")
	v.check(t.TTL > 0, p+".ttl", "must be > 0")
	v.check(t.MaxEntries > 0, p+".max_entries", "must be > 0")
	v.check(t.MaxTenants > 0, p+".max_tenants", "must be > 0")
	v.check(t.Grace >= 0, p+".grace", "must be >= 0")
	v.check(t.SharedQueue >= 0, p+".shared_queue", "must be >= 0")
	for j, s := range t.StoreFrom {
		v.check(s == "primary" || s == "fallback", fmt.Sprintf("%s.store_from[%d]", p, j),
			`must be "primary" or "fallback"`)
	}
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
