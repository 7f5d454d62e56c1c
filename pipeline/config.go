package pipeline

import "time"

// Config is the whole configuration file of ragfuse (YAML). The names are
// the contract documented in README.md; zero fields take the defaults
// written beside them. Secrets are never in it: only the names of the
// environment variables that hold them.
type Config struct {
	Server        ServerConfig           `yaml:"server"`
	Auth          AuthConfig             `yaml:"auth"`
	Models        map[string]ModelConfig `yaml:"models"`
	KnowledgeBase KnowledgeBaseConfig    `yaml:"knowledge_base"`
	Redis         RedisConfig            `yaml:"redis"`
	RateLimit     RateLimitConfig        `yaml:"rate_limit"`
	Notes         NotesConfig            `yaml:"notes"`
	Tiers         []TierConfig           `yaml:"tiers"`
}

// ServerConfig configures the HTTP server.
type ServerConfig struct {
	Addr             string        `yaml:"addr"`               // default "127.0.0.1:8080"
	RequestTimeout   time.Duration `yaml:"request_timeout"`    // overall deadline of a question; default 12s
	MaxQuestionBytes int           `yaml:"max_question_bytes"` // default 4096
	MaxBodyBytes     int           `yaml:"max_body_bytes"`     // default 64 KiB
	ShutdownGrace    time.Duration `yaml:"shutdown_grace"`     // default 15s
	DrainDelay       time.Duration `yaml:"drain_delay"`        // on SIGINT/SIGTERM, /readyz is 503 this long before the listener closes; default 0
	DefaultLanguage  string        `yaml:"default_language"`   // "zh" or "en"; default "zh"
}

// AuthConfig lists API keys. With no keys, requests are not authenticated
// and the tenant comes from the request body.
type AuthConfig struct {
	Keys []AuthKey `yaml:"keys"`
}

// AuthKey maps the API key held in environment variable KeyEnv to a tenant.
type AuthKey struct {
	KeyEnv string `yaml:"key_env"`
	Tenant string `yaml:"tenant"`
}

// ModelConfig is one OpenAI-compatible model endpoint.
type ModelConfig struct {
	BaseURL   string        `yaml:"base_url"`    // http or https, without query or fragment
	APIKeyEnv string        `yaml:"api_key_env"` // empty: no key (e.g. local Ollama)
	Model     string        `yaml:"model"`       // the provider's model name; default: the entry's key
	MaxTokens int           `yaml:"max_tokens"`  // default 512
	Cooldown  time.Duration `yaml:"cooldown"`    // after a 429 without Retry-After; default 10s
}

// KnowledgeBaseConfig says where the knowledge base is.
type KnowledgeBaseConfig struct {
	Path string `yaml:"path"` // a folder of Markdown and JSON Lines files; no default (required by a retrieval tier)
}

// RedisConfig enables shared breaker state and rate limits.
type RedisConfig struct {
	URL       string        `yaml:"url"`        // empty: state stays in this process
	Prefix    string        `yaml:"prefix"`     // key namespace; default "ragfuse"
	OpTimeout time.Duration `yaml:"op_timeout"` // bound of every Redis call; default 50ms
}

// RateLimitConfig configures admission.
type RateLimitConfig struct {
	GlobalRPS   float64 `yaml:"global_rps"`   // 0: unlimited
	GlobalBurst int     `yaml:"global_burst"` // default max(1, int(GlobalRPS))
	TenantRPS   float64 `yaml:"tenant_rps"`   // 0: unlimited
	TenantBurst int     `yaml:"tenant_burst"` // default max(1, int(TenantRPS))
	OnLimit     string  `yaml:"on_limit"`     // "degrade" (default) or "reject"
}

// NotesConfig overrides the degradation notes and actions shown per source,
// by language ("zh", "en") and then by source name.
type NotesConfig map[string]map[string]NoteConfig

// NoteConfig is the note and actions for one source in one language.
type NoteConfig struct {
	Note            string `yaml:"note"`
	Refresh         *bool  `yaml:"refresh"`
	RetryLater      *bool  `yaml:"retry_later"`
	CustomerService *bool  `yaml:"customer_service"`
}

// TierConfig is one tier of the chain. Which fields apply depends on Kind.
type TierConfig struct {
	Name    string        `yaml:"name"`    // default: the kind; "cache" for semantic_cache, the source for llm
	Kind    string        `yaml:"kind"`    // semantic_cache, stale_cache, llm, retrieval, static
	Source  string        `yaml:"source"`  // llm only: primary or fallback; default primary for the first llm tier
	Timeout time.Duration `yaml:"timeout"` // default per kind: semantic_cache/stale_cache 300ms, llm 10s, retrieval 1s, static 100ms
	Reserve time.Duration `yaml:"reserve"` // time the earlier tiers leave for this one; default: see Stage.Reserve

	Breaker  *BreakerConfig  `yaml:"breaker"`
	Bulkhead *BulkheadConfig `yaml:"bulkhead"`

	// llm
	Models      []string `yaml:"models"`
	ContextDocs int      `yaml:"context_docs"` // default 5
	Prompt      string   `yaml:"prompt"`       // system prompt override

	// streaming (llm)
	FirstTokenTimeout   time.Duration `yaml:"first_token_timeout"`
	StallTimeout        time.Duration `yaml:"stall_timeout"`
	CommitAfter         int           `yaml:"commit_after"`          // characters buffered before the stream is committed
	CommitAfterDuration time.Duration `yaml:"commit_after_duration"` // time after the first token buffered before commit; with commit_after, whichever comes first
	OnStreamBreak       string        `yaml:"on_stream_break"`       // "note" (default) or "continue"
	ContinuePrompt      string        `yaml:"continue_prompt"`

	// semantic_cache, stale_cache (all share one cache and embedder, set by
	// the first of them; grace is the largest of the stale_cache tiers')
	Embedder   string        `yaml:"embedder"`    // "hash" or a models: entry
	Similarity float64       `yaml:"similarity"`  // default 0.92
	TTL        time.Duration `yaml:"ttl"`         // default 24h
	MaxEntries int           `yaml:"max_entries"` // per tenant; default 10000
	StoreFrom  []string      `yaml:"store_from"`  // semantic_cache: primary and/or fallback; default [primary]; []: none
	Grace      time.Duration `yaml:"grace"`       // stale_cache: how long past expiry an entry may be served; default 1h

	// retrieval
	TopK int `yaml:"top_k"` // default 3

	// static
	Message string `yaml:"message"`
}

// BreakerConfig is the YAML form of breaker.Config; its zero fields take
// breaker.Config's defaults. It configures a tier's breaker "tier/<name>"
// and, for an llm tier, the "model/<id>" breakers of the models it is the
// first to name.
type BreakerConfig struct {
	FailureThreshold int           `yaml:"failure_threshold"`
	Window           int           `yaml:"window"`
	WindowDuration   time.Duration `yaml:"window_duration"`
	MinimumCalls     int           `yaml:"minimum_calls"`
	FailureRate      float64       `yaml:"failure_rate"`
	SlowCallDuration time.Duration `yaml:"slow_call_duration"`
	SlowCallRate     float64       `yaml:"slow_call_rate"`
	OpenDuration     time.Duration `yaml:"open_duration"`
	OpenBackoff      float64       `yaml:"open_backoff"`
	MaxOpenDuration  time.Duration `yaml:"max_open_duration"`
	HalfOpenMaxCalls int           `yaml:"half_open_max_calls"`
	SuccessThreshold int           `yaml:"success_threshold"`
}

// BulkheadConfig limits concurrent calls into a tier.
type BulkheadConfig struct {
	MaxConcurrent int           `yaml:"max_concurrent"`
	MaxQueue      int           `yaml:"max_queue"`
	QueueTimeout  time.Duration `yaml:"queue_timeout"`
}
