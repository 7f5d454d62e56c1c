package config

import "time"

// Config is the whole configuration file of ragfuse (YAML). The names are
// the contract documented in README.md; zero fields take the defaults
// written beside them (filled by Defaults, or by the HTTP server for the
// server: fields it owns). Secrets are never in it: only the names of the
// environment variables that hold them.
type Config struct {
	Server        Server           `yaml:"server"`
	Auth          Auth             `yaml:"auth"`
	Models        map[string]Model `yaml:"models"`
	KnowledgeBase KnowledgeBase    `yaml:"knowledge_base"`
	Redis         Redis            `yaml:"redis"`
	RateLimit     RateLimit        `yaml:"rate_limit"`
	Notes         Notes            `yaml:"notes"`
	Tracing       Tracing          `yaml:"tracing"`
	Console       Console          `yaml:"console"`
	OpenAI        OpenAI           `yaml:"openai"`
	Tiers         []Tier           `yaml:"tiers"`
}

// Tracing configures OpenTelemetry tracing over OTLP/HTTP: a span per
// question, per tier and per model call. It is off unless OTLPEndpoint
// or the standard OTEL_EXPORTER_OTLP_ENDPOINT is set.
type Tracing struct {
	OTLPEndpoint string  `yaml:"otlp_endpoint"` // base URL of the collector, e.g. http://127.0.0.1:4318; spans go to its /v1/traces
	ServiceName  string  `yaml:"service_name"`  // default "ragfuse"
	SampleRatio  float64 `yaml:"sample_ratio"`  // share of the traces started here that are recorded, in (0, 1]; default 1
}

// Console configures the web console (GET /console).
type Console struct {
	ShowQuestions bool `yaml:"show_questions"` // the feed of the latest questions shows their text; default false
}

// Server configures the HTTP server. A zero field other than
// RequestTimeout is left zero by Defaults: the server applies the default
// written beside it.
type Server struct {
	Addr             string        `yaml:"addr"`               // default "127.0.0.1:8080"
	RequestTimeout   time.Duration `yaml:"request_timeout"`    // overall deadline of a question; default 12s
	MaxQuestionBytes int           `yaml:"max_question_bytes"` // default 4096
	MaxBodyBytes     int           `yaml:"max_body_bytes"`     // default 64 KiB
	ShutdownGrace    time.Duration `yaml:"shutdown_grace"`     // default 15s
	DrainDelay       time.Duration `yaml:"drain_delay"`        // on SIGINT/SIGTERM, /readyz is 503 this long before the listener closes; default 0
	DefaultLanguage  string        `yaml:"default_language"`   // notes without Accept-Language or a question in a known script: "zh" or "en"; default "zh"
	MaxHistoryTurns  int           `yaml:"max_history_turns"`  // turns of history a question keeps, the oldest beyond dropped; default 20
	MaxHistoryBytes  int           `yaml:"max_history_bytes"`  // bytes of the turns kept; more is 413 history_too_long; default 16384
	ReadTimeout      time.Duration `yaml:"read_timeout"`       // a request's headers and body must arrive within it, or 408; default 10s
	IdleTimeout      time.Duration `yaml:"idle_timeout"`       // a kept-alive connection with no request is closed after it; default 120s
	MaxConnections   int           `yaml:"max_connections"`    // connections open at once; one more waits briefly, then is closed; default 10000
}

// Auth lists API keys: tenant keys ask questions, admin keys use the
// admin routes and the full status. With no keys at all, requests are not
// authenticated, the tenant comes from the request body, and the admin
// routes answer loopback clients only. ResolveKeys and ResolveAdminKeys
// read the keys.
type Auth struct {
	Keys      []AuthKey  `yaml:"keys"`
	AdminKeys []AdminKey `yaml:"admin_keys"`
}

// AuthKey maps the API key held in environment variable KeyEnv to a tenant.
type AuthKey struct {
	KeyEnv string `yaml:"key_env"`
	Tenant string `yaml:"tenant"`
}

// Model kinds of Model.Kind.
const (
	ModelChat      = "chat"
	ModelEmbedding = "embedding"
	ModelRerank    = "rerank"
)

// AdminKey is an admin key held in environment variable KeyEnv; Name
// (1-64 of A-Z a-z 0-9 _ . -) names it in the log lines of admin actions.
type AdminKey struct {
	KeyEnv string `yaml:"key_env"`
	Name   string `yaml:"name"`
}

// Model is one OpenAI-compatible model endpoint.
type Model struct {
	Kind      string        `yaml:"kind"`        // chat (default), embedding or rerank (POST base_url/rerank, Jina/Cohere-compatible)
	BaseURL   string        `yaml:"base_url"`    // http or https, without query or fragment
	APIKeyEnv string        `yaml:"api_key_env"` // empty: no key (e.g. local Ollama)
	Model     string        `yaml:"model"`       // the provider's model name; default: the entry's key
	MaxTokens int           `yaml:"max_tokens"`  // default 512
	Cooldown  time.Duration `yaml:"cooldown"`    // after a 429 without Retry-After; default 10s
	Probe     *Probe        `yaml:"probe"`       // nil: no active probing; questions probe the model's half-open breaker
}

// Probe turns on the active probing of a model (pipeline.Probe): while
// its breaker "model/<id>" is open, a background prober sends the
// smallest request of the model's kind when the open time ends, at most
// once per interval (once for the whole cluster with Redis), and
// questions skip the model until a probe closes the breaker.
type Probe struct {
	Interval time.Duration `yaml:"interval"` // probes at least this far apart; default 10s
	Timeout  time.Duration `yaml:"timeout"`  // bounds one probe request; default 5s
}

// KnowledgeBase says where the knowledge base is and how its documents
// are ranked.
type KnowledgeBase struct {
	Path string `yaml:"path"` // a folder of Markdown and JSON Lines files; no default (required by a retrieval tier)
	// MinRelevance is how many standard deviations above the question's
	// mean similarity to the corpus a document's similarity must stand to
	// be returned by vector search alone (retrieval.HybridConfig); default
	// retrieval.DefaultMinRelevance (5); negative admits every vector hit.
	// With the hash embedder such a document also needs cosine 0.99.
	MinRelevance float64 `yaml:"min_relevance"`
	Rerank       *Rerank `yaml:"rerank"` // nil: no reranking
	// Timeout bounds a question's retrieval, whichever tier asks for it,
	// apart from that tier's own time limit; default: the first retrieval
	// tier's timeout, or 1s.
	Timeout time.Duration `yaml:"timeout"`
	// Condense, if set, lets a model rewrite a question with history into
	// a standalone question before retrieval (tiers.Condenser).
	Condense *Condense `yaml:"condense"`
}

// Rerank reranks each question's documents once with a rerank model
// (tiers.Rerank).
type Rerank struct {
	Model      string        `yaml:"model"`      // required: a models: entry of kind rerank
	Candidates int           `yaml:"candidates"` // documents retrieved and reranked; default 20
	Timeout    time.Duration `yaml:"timeout"`    // default 800ms
	MinScore   float64       `yaml:"min_score"`  // documents scored below it are dropped; default 0
}

// Condense configures the rewrite of follow-up questions.
type Condense struct {
	Model   string        `yaml:"model"`   // required: a models: id
	Timeout time.Duration `yaml:"timeout"` // bound of one rewrite; default 1s
}

// OpenAI configures the OpenAI-compatible front door.
type OpenAI struct {
	// NoteInContent appends the degradation note to the message content,
	// for clients that never read the ragfuse field; default false.
	NoteInContent bool `yaml:"note_in_content"`
}

// Redis enables shared breaker state, rate limits, cooldowns,
// knowledge-base reloads and the semantic cache.
type Redis struct {
	URL       string        `yaml:"url"`        // empty: state stays in this process
	URLEnv    string        `yaml:"url_env"`    // the environment variable holding the whole URL (password included), instead of url
	Prefix    string        `yaml:"prefix"`     // key namespace; default "ragfuse"
	Instance  string        `yaml:"instance"`   // this instance's name in the cluster's status; default random
	OpTimeout time.Duration `yaml:"op_timeout"` // bound of every Redis call; default 50ms
}

// RateLimit configures admission (pipeline.RateLimitConfig).
type RateLimit struct {
	GlobalRPS   float64 `yaml:"global_rps"`   // 0: unlimited
	GlobalBurst int     `yaml:"global_burst"` // default max(1, int(GlobalRPS))
	TenantRPS   float64 `yaml:"tenant_rps"`   // 0: unlimited
	TenantBurst int     `yaml:"tenant_burst"` // default max(1, int(TenantRPS))
	OnLimit     string  `yaml:"on_limit"`     // "degrade" (default) or "reject"
}

// Notes overrides the degradation notes and actions shown per source, by
// language ("zh", "en") and then by source name.
type Notes map[string]map[string]Note

// Note is the note and actions for one source in one language; a nil
// action keeps the built-in value.
type Note struct {
	Note            string `yaml:"note"`
	Refresh         *bool  `yaml:"refresh"`
	RetryLater      *bool  `yaml:"retry_later"`
	CustomerService *bool  `yaml:"customer_service"`
}

// Tier kinds of Tier.Kind.
const (
	KindSemanticCache = "semantic_cache"
	KindStaleCache    = "stale_cache"
	KindLLM           = "llm"
	KindRetrieval     = "retrieval"
	KindStatic        = "static"
)

// Tier is one tier of the chain. In YAML its fields are one flat mapping;
// in Go the settings of each kind are a struct of their own. A field is
// valid only on the kinds its `kind` tag lists (a field without the tag
// on every kind): one of another kind is an error with its path, e.g.
// "tiers[2].top_k: not a field of an llm tier".
type Tier struct {
	Name    string        `yaml:"name"`    // default: the kind; "cache" for semantic_cache, the source for llm
	Kind    string        `yaml:"kind"`    // semantic_cache, stale_cache, llm, retrieval, static
	Timeout time.Duration `yaml:"timeout"` // default per kind: semantic_cache/stale_cache 300ms, llm 10s, retrieval 1s, static 100ms
	Reserve time.Duration `yaml:"reserve"` // time the earlier tiers leave for this one; default: see pipeline.Stage.Reserve

	Breaker  *Breaker  `yaml:"breaker"`
	Bulkhead *Bulkhead `yaml:"bulkhead"`

	LLM       LLMTier       `yaml:",inline" kind:"llm"`
	Cache     CacheTier     `yaml:",inline" kind:"semantic_cache,stale_cache"`
	Retrieval RetrievalTier `yaml:",inline" kind:"retrieval"`
	Static    StaticTier    `yaml:",inline" kind:"static"`
}

// LLMTier holds the settings of an llm tier.
type LLMTier struct {
	Source      string   `yaml:"source"`       // primary or fallback; default primary for the first llm tier, fallback after it
	Models      []string `yaml:"models"`       // required: models: ids, tried in order
	ContextDocs int      `yaml:"context_docs"` // default 5
	Prompt      string   `yaml:"prompt"`       // system prompt override
	// HistoryTurns is how many of the latest turns of a conversation go
	// into the prompt, within a bound on their size; default 6; 0 sends
	// none.
	HistoryTurns *int `yaml:"history_turns"`

	// Streaming; see pipeline.StreamConfig.
	FirstTokenTimeout   time.Duration `yaml:"first_token_timeout"`
	StallTimeout        time.Duration `yaml:"stall_timeout"`
	CommitAfter         int           `yaml:"commit_after"`          // characters buffered before the stream is committed
	CommitAfterDuration time.Duration `yaml:"commit_after_duration"` // time after the first token buffered before commit; with commit_after, whichever comes first
	OnStreamBreak       string        `yaml:"on_stream_break"`       // "note" (default) or "continue"
	ContinuePrompt      string        `yaml:"continue_prompt"`

	// Hedging; see pipeline.Stage.HedgeAfter. HedgeAfter 0 (the default)
	// hedges nothing; a later llm tier is required to hedge with.
	HedgeAfter  time.Duration `yaml:"hedge_after"`
	HedgeBudget float64       `yaml:"hedge_budget"` // share of the tier's calls hedged while it is healthy; default 0.1, at most 1
}

// CacheTier holds the settings of a semantic_cache or stale_cache tier.
// All cache tiers share one cache and embedder, set by the first of them;
// the cache's grace is the largest of the stale_cache tiers'.
type CacheTier struct {
	Embedder   string        `yaml:"embedder"`                         // "hash" (default) or a models: entry
	Similarity float64       `yaml:"similarity"`                       // default 0.92
	TTL        time.Duration `yaml:"ttl"`                              // default 24h
	MaxEntries int           `yaml:"max_entries"`                      // per tenant; default 10000
	MaxTenants int           `yaml:"max_tenants"`                      // tenants held; the least recently used is dropped; default 10000
	StoreFrom  []string      `yaml:"store_from" kind:"semantic_cache"` // primary and/or fallback; default [primary]; []: none
	Grace      time.Duration `yaml:"grace" kind:"stale_cache"`         // how long past expiry an entry may be served; default 1h
	// Shared shares the cache with every instance using the same Redis
	// and redis.prefix (package rediscache); default true when redis.url
	// or redis.url_env is set. Without Redis the cache stays local (a
	// shared: true then logs a warning at start).
	Shared *bool `yaml:"shared" kind:"semantic_cache"`
	// SharedQueue bounds the entries waiting to be written to Redis, the
	// oldest dropped beyond it; default 4096.
	SharedQueue int `yaml:"shared_queue" kind:"semantic_cache"`
}

// RetrievalTier holds the settings of a retrieval tier.
type RetrievalTier struct {
	TopK int `yaml:"top_k"` // default 3
}

// StaticTier holds the settings of a static tier.
type StaticTier struct {
	Message string `yaml:"message"` // default: a zh or en sentence by the question's language
}

// Breaker is the YAML form of breaker.Config; its zero fields take
// breaker.Config's defaults. It configures a tier's breaker "tier/<name>"
// and, for an llm tier, the "model/<id>" breakers of the models it is the
// first to name.
type Breaker struct {
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

// Bulkhead limits concurrent calls into a tier (pipeline.BulkheadConfig).
type Bulkhead struct {
	MaxConcurrent int           `yaml:"max_concurrent"` // required
	MaxQueue      int           `yaml:"max_queue"`      // calls that may wait for a slot; default 0
	QueueTimeout  time.Duration `yaml:"queue_timeout"`  // default DefaultQueueTimeout
}
