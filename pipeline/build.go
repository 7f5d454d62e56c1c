package pipeline

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
)

// BuildEnv is what Build takes from its surroundings rather than from the
// configuration file. Zero fields take the defaults written beside them.
type BuildEnv struct {
	// Getenv reads the environment variables named by api_key_env; nil
	// means os.Getenv.
	Getenv func(string) string
	// Clock tells the time of breakers, cooldowns, rate limits and caches;
	// nil means the system clock.
	Clock clock.Clock
	// Observer receives the pipeline's events; nil drops them.
	Observer Observer
	// HTTPClient sends the model calls; nil means a new http.Client. Its
	// Timeout should be zero: calls are bounded by context.
	HTTPClient *http.Client
	// KnowledgeBase is used as it is; nil means opening
	// knowledge_base.path.
	KnowledgeBase *retrieval.KnowledgeBase
	// BreakerStore shares breaker state between instances; nil keeps it in
	// this process, unless redis.url is set: Build then opens a
	// redisstore.Store and its shared rate limiter, closed by Close.
	BreakerStore breaker.Store
	// StoreKind names BreakerStore for Status; default "redis" with a
	// store, "memory" without.
	StoreKind string
	// Logger receives the shared store's reports (Redis lost, Redis back);
	// nil means slog.Default().
	Logger *slog.Logger
}

func orGetenv(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}

// Build returns a ready pipeline for cfg: it fills defaults, validates cfg
// and the environment, opens the knowledge base, makes one go-openai client
// per model (API keys read only from the variables named), and builds the
// tiers with their guards.
func Build(cfg Config, env BuildEnv) (*Pipeline, error) {
	cfg.Defaults()
	if err := errors.Join(cfg.Validate(), cfg.CheckEnv(env.Getenv)); err != nil {
		return nil, err
	}
	if cfg.Redis.URL != "" && env.BreakerStore == nil {
		return buildShared(cfg, env)
	}
	getenv := orGetenv(env.Getenv)
	b := &builder{cfg: cfg, env: env, models: map[string]tiers.Candidate{}}
	if err := b.knowledgeBase(); err != nil {
		return nil, err
	}
	hc := env.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	for id, m := range cfg.Models {
		client := tiers.NewClient(tiers.ClientConfig{BaseURL: m.BaseURL, APIKey: getenv(m.APIKeyEnv), HTTPClient: hc})
		b.models[id] = tiers.Candidate{ID: id, Model: m.Model, Client: client, MaxTokens: m.MaxTokens, Cooldown: m.Cooldown}
	}
	if err := b.embedder(); err != nil {
		return nil, err
	}
	stages := make([]Stage, 0, len(cfg.Tiers))
	for i, tc := range cfg.Tiers {
		t, err := b.tier(i, tc)
		if err != nil {
			return nil, err
		}
		stages = append(stages, Stage{
			Tier:     t,
			Timeout:  tc.Timeout,
			Reserve:  tc.Reserve,
			Breaker:  breakerConfig(tc.Breaker, env.BreakerStore),
			Bulkhead: tc.Bulkhead,
			Model:    tc.Kind == KindLLM,
			Stream: StreamConfig{FirstTokenTimeout: tc.FirstTokenTimeout, StallTimeout: tc.StallTimeout,
				CommitAfter: tc.CommitAfter, CommitAfterDuration: tc.CommitAfterDuration,
				OnStreamBreak: tc.OnStreamBreak, ContinuePrompt: tc.ContinuePrompt},
		})
	}
	storeKind := env.StoreKind
	if storeKind == "" && env.BreakerStore != nil {
		storeKind = "redis"
	}
	opts := Options{
		Tiers:            stages,
		RequestTimeout:   cfg.Server.RequestTimeout,
		Clock:            env.Clock,
		Observer:         env.Observer,
		RateLimit:        cfg.RateLimit,
		Embedder:         b.emb,
		EmbedderModel:    b.embID,
		EmbedderCooldown: b.models[b.embID].Cooldown,
		Cooldown:         DefaultCooldown,
		StoreKind:        storeKind,
		Store:            env.BreakerStore,
		Closers:          b.closers,
	}
	if b.kb != nil {
		opts.KnowledgeBase = b.kb
	}
	return New(opts)
}

// builder holds what the tiers of one Build share.
type builder struct {
	cfg     Config
	env     BuildEnv
	kb      *retrieval.KnowledgeBase
	ret     retrieval.Retriever        // the knowledge base, hybrid when an embedder is configured
	emb     cache.Embedder             // the embedder shared by the caches and the retriever
	embID   string                     // the models: id behind emb; "" for the hash embedder
	cache   *cache.Cache               // shared by the cache tiers
	models  map[string]tiers.Candidate // by models: key
	closers []io.Closer
}

func (b *builder) knowledgeBase() error {
	b.kb = b.env.KnowledgeBase
	if b.kb == nil && b.cfg.KnowledgeBase.Path != "" {
		kb, err := retrieval.Open(b.cfg.KnowledgeBase.Path)
		if err != nil {
			return &FieldError{Path: "knowledge_base.path", Msg: err.Error()}
		}
		b.kb = kb
	}
	if b.kb != nil {
		b.ret = b.kb
	}
	for i, t := range b.cfg.Tiers {
		if t.Kind == KindRetrieval && b.kb == nil {
			return &FieldError{Path: "knowledge_base.path", Msg: fmt.Sprintf("is required by tiers[%d] (%s)", i, t.Name)}
		}
	}
	return nil
}

// embedder makes the embedder of the first cache tier; the retriever
// blends it with the lexical index so a question is embedded once.
func (b *builder) embedder() error {
	for _, t := range b.cfg.Tiers {
		if t.Kind != KindSemanticCache && t.Kind != KindStaleCache {
			continue
		}
		if t.Embedder == "hash" {
			b.emb = cache.NewHashEmbedder(cache.DefaultHashDim)
		} else {
			m := b.models[t.Embedder]
			b.emb = cache.NewOpenAIEmbedder(cache.OpenAIEmbedderConfig{Client: m.Client, Model: m.Model})
			b.embID = t.Embedder
		}
		break
	}
	if b.emb != nil && b.kb != nil {
		hc := retrieval.HybridConfig{Lexical: b.kb, Embedder: b.emb}
		if b.embID == "" {
			hc.MinSimilarity = hashMinSimilarity
		}
		b.ret = retrieval.NewHybrid(hc)
	}
	return nil
}

// hashMinSimilarity is the similarity a document needs to enter a
// question's results through the hash embedder alone. Hash vectors weigh
// words, so a document that shares no word with the question comes near
// it only through bucket collisions ("hello" near three invoice articles
// at 0.55): with the hash embedder, vectors re-rank what the keyword
// index finds, and only a near-duplicate enters on its own.
const hashMinSimilarity = 0.99

// tier builds tiers[i].
func (b *builder) tier(i int, tc TierConfig) (tiers.Tier, error) {
	switch tc.Kind {
	case KindLLM:
		var cands []tiers.Candidate
		for _, id := range tc.Models {
			cands = append(cands, b.models[id])
		}
		var ret retrieval.Retriever
		if b.ret != nil && tc.ContextDocs > 0 {
			ret = b.ret
		}
		return tiers.NewLLM(tiers.LLMConfig{Name: tc.Name, Source: tiers.Source(tc.Source), Candidates: cands,
			Retriever: ret, ContextDocs: tc.ContextDocs, SystemPrompt: tc.Prompt}), nil
	case KindRetrieval:
		return tiers.NewRetrieval(tiers.RetrievalConfig{Name: tc.Name, Retriever: b.ret, TopK: tc.TopK}), nil
	case KindStatic:
		return tiers.NewStatic(tc.Name, tc.Message), nil
	case KindSemanticCache, KindStaleCache:
		return b.cacheTier(i, tc)
	}
	return nil, &FieldError{Path: fmt.Sprintf("tiers[%d].kind", i), Msg: fmt.Sprintf("unknown kind %q", tc.Kind)}
}

// breakerConfig turns the YAML form into a breaker.Config.
func breakerConfig(c *BreakerConfig, store breaker.Store) breaker.Config {
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

// cacheTier builds a semantic_cache or stale_cache tier. All cache tiers
// share one cache, configured by the first of them: a stale_cache serves
// what the semantic cache stored.
func (b *builder) cacheTier(i int, tc TierConfig) (tiers.Tier, error) {
	if b.cache == nil {
		cc := cache.Config{Similarity: tc.Similarity, TTL: tc.TTL, MaxEntries: tc.MaxEntries}
		for _, t := range b.cfg.Tiers {
			if t.Kind == KindStaleCache {
				cc.Grace = max(cc.Grace, t.Grace)
			}
		}
		if b.env.Clock != nil {
			cc.Clock = b.env.Clock
		}
		b.cache = cache.New(cc)
	}
	var version func() uint64
	if b.kb != nil {
		version = b.kb.Version
	}
	if tc.Kind == KindStaleCache {
		return tiers.NewStaleCache(tiers.StaleCacheConfig{Name: tc.Name, Cache: b.cache, Embedder: b.emb, KBVersion: version}), nil
	}
	from := make([]tiers.Source, 0, len(tc.StoreFrom)) // not nil: store_from: [] stores nothing
	for _, s := range tc.StoreFrom {
		from = append(from, tiers.Source(s))
	}
	return tiers.NewSemanticCache(tiers.SemanticCacheConfig{Name: tc.Name, Cache: b.cache, Embedder: b.emb,
		StoreFrom: from, KBVersion: version}), nil
}
