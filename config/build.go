package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/otel/trace"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
)

// Env is what Build takes from its surroundings rather than from the
// configuration file. Zero fields take the defaults written beside them.
type Env struct {
	// Getenv reads the environment variables named by api_key_env; nil
	// means os.Getenv.
	Getenv func(string) string
	// Clock tells the time of breakers, cooldowns, rate limits and caches;
	// nil means the system clock.
	Clock clock.Clock
	// Observer receives the pipeline's events; nil drops them.
	Observer pipeline.Observer
	// HTTPClient sends the model calls; nil means a new http.Client. Its
	// Timeout should be zero: calls are bounded by context.
	HTTPClient *http.Client
	// KnowledgeBase is used as it is; nil means opening
	// knowledge_base.path.
	KnowledgeBase *retrieval.KnowledgeBase
	// BreakerStore shares breaker state between instances; nil keeps it in
	// this process, unless redis.url is set: Build then opens a
	// redisstore.Store and its shared rate limiter, closed by the
	// pipeline's Close.
	BreakerStore breaker.Store
	// StoreKind names BreakerStore for Status; default "redis" with a
	// store, "memory" without.
	StoreKind string
	// Logger receives the shared store's reports (Redis lost, Redis back);
	// nil means slog.Default().
	Logger *slog.Logger
	// Tracer records the pipeline's spans (pipeline.Options.Tracer); nil
	// records none. The tracing: section says how to make one (see
	// api.NewTracerProvider).
	Tracer trace.Tracer
}

// Build returns a ready pipeline for cfg: it fills defaults, validates cfg
// and the environment, opens the knowledge base (and, with redis.url, the
// shared store), makes one go-openai client per model (API keys read only
// from the variables named), and builds the tiers with their guards. The
// pipeline's Close closes what Build opened.
func Build(cfg Config, env Env) (*pipeline.Pipeline, error) {
	opts, err := options(cfg, env)
	if err != nil {
		return nil, err
	}
	p, err := pipeline.New(opts)
	if err != nil {
		closeAll(opts.Closers)
		return nil, err
	}
	if c, ok := opts.Cluster.(*clusterLink); ok {
		c.join(p)
	}
	return p, nil
}

// options checks cfg and assembles what Build passes to pipeline.New. On
// an error, nothing it opened stays open.
func options(cfg Config, env Env) (pipeline.Options, error) {
	cfg.Defaults()
	if err := errors.Join(cfg.Validate(), cfg.CheckEnv(env.Getenv)); err != nil {
		return pipeline.Options{}, err
	}
	b := &builder{cfg: cfg, env: env, models: map[string]tiers.Candidate{}}
	if url := redisURL(cfg.Redis, env.Getenv); url != "" && env.BreakerStore == nil {
		if err := b.openShared(url); err != nil {
			return pipeline.Options{}, err
		}
	}
	opts, err := b.options()
	if err != nil {
		closeAll(b.closers)
		return pipeline.Options{}, err
	}
	return opts, nil
}

// builder holds what the tiers of one Build share.
type builder struct {
	cfg     Config
	env     Env
	kb      *retrieval.KnowledgeBase
	ret     retrieval.Retriever        // the knowledge base, hybrid when an embedder is configured
	emb     cache.Embedder             // the embedder shared by the caches and the retriever
	embID   string                     // the models: id behind emb; "" for the hash embedder
	cache   *cache.Cache               // shared by the cache tiers
	models  map[string]tiers.Candidate // by models: key
	limiter pipeline.Limiter           // the shared rate limiter; nil: local limits only
	cluster *clusterLink               // cooldowns and reloads shared through Redis; nil: none
	closers []io.Closer
}

func (b *builder) options() (pipeline.Options, error) {
	if err := b.knowledgeBase(); err != nil {
		return pipeline.Options{}, err
	}
	getenv := orGetenv(b.env.Getenv)
	hc := b.env.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	for id, m := range b.cfg.Models {
		client := tiers.NewClient(tiers.ClientConfig{BaseURL: m.BaseURL, APIKey: getenv(m.APIKeyEnv), HTTPClient: hc})
		b.models[id] = tiers.Candidate{ID: id, Model: m.Model, Client: client, MaxTokens: m.MaxTokens, Cooldown: m.Cooldown}
	}
	b.embedder()
	rerank := b.rerank(getenv, hc)
	probes := b.probes(getenv, hc)
	stages := make([]pipeline.Stage, 0, len(b.cfg.Tiers))
	for i, tc := range b.cfg.Tiers {
		t, err := b.tier(i, tc)
		if err != nil {
			return pipeline.Options{}, err
		}
		stages = append(stages, stage(t, tc, b.env.BreakerStore))
	}
	storeKind := b.env.StoreKind
	if storeKind == "" && b.env.BreakerStore != nil {
		storeKind = "redis"
	}
	opts := pipeline.Options{
		Tiers:            stages,
		RequestTimeout:   b.cfg.Server.RequestTimeout,
		RetrievalTimeout: b.cfg.KnowledgeBase.Timeout,
		Clock:            b.env.Clock,
		Observer:         b.env.Observer,
		RateLimit:        rateLimit(b.cfg.RateLimit),
		Embedder:         b.emb,
		EmbedderModel:    b.embID,
		EmbedderCooldown: b.models[b.embID].Cooldown,
		Rerank:           rerank,
		StoreKind:        storeKind,
		Store:            b.env.BreakerStore,
		Limiter:          b.limiter,
		Closers:          b.closers,
		Tracer:           b.env.Tracer,
		Probes:           probes,
	}
	if b.kb != nil {
		opts.KnowledgeBase = b.kb
	}
	if b.cluster != nil {
		opts.Cluster = b.cluster
	}
	if h, ok := b.ret.(*retrieval.Hybrid); ok {
		opts.Vectors = h
		opts.Closers = append(opts.Closers, h)
	}
	if cd := b.cfg.KnowledgeBase.Condense; cd != nil {
		opts.Condenser = tiers.NewCondenser(tiers.CondenserConfig{Model: b.models[cd.Model], Timeout: cd.Timeout})
	}
	return opts, nil
}

// rerank returns the reranking of knowledge_base.rerank, nil without it.
func (b *builder) rerank(getenv func(string) string, hc *http.Client) *tiers.Rerank {
	rc := b.cfg.KnowledgeBase.Rerank
	if rc == nil {
		return nil
	}
	m := b.cfg.Models[rc.Model]
	client := tiers.NewRerankClient(tiers.RerankClientConfig{BaseURL: m.BaseURL, APIKey: getenv(m.APIKeyEnv),
		Model: m.Model, ID: rc.Model, HTTPClient: hc})
	return &tiers.Rerank{Reranker: client, Model: tiers.Candidate{ID: rc.Model, Cooldown: m.Cooldown},
		Candidates: rc.Candidates, Timeout: rc.Timeout, MinScore: rc.MinScore}
}

// probes returns the active probing of the models with a probe: section,
// each sending the smallest request of its model's kind.
func (b *builder) probes(getenv func(string) string, hc *http.Client) []pipeline.Probe {
	var out []pipeline.Probe
	for _, id := range sortedKeys(b.cfg.Models) {
		m := b.cfg.Models[id]
		if m.Probe == nil {
			continue
		}
		c := b.models[id]
		var send func(context.Context) error
		switch m.Kind {
		case ModelEmbedding:
			send = func(ctx context.Context) error { return tiers.ProbeEmbedding(ctx, c.Client, id, c.Model) }
		case ModelRerank:
			rc := tiers.NewRerankClient(tiers.RerankClientConfig{BaseURL: m.BaseURL, APIKey: getenv(m.APIKeyEnv),
				Model: m.Model, ID: id, HTTPClient: hc})
			send = func(ctx context.Context) error { return tiers.ProbeRerank(ctx, rc) }
		default:
			send = func(ctx context.Context) error { return tiers.ProbeChat(ctx, c.Client, id, c.Model) }
		}
		out = append(out, pipeline.Probe{Model: id, Interval: m.Probe.Interval, Timeout: m.Probe.Timeout, Send: send})
	}
	return out
}

// historyTurns returns an llm tier's history_turns as tiers.LLMConfig
// takes it: 0 (none) as a negative number, unset as the default.
func historyTurns(n *int) int {
	switch {
	case n == nil:
		return 0
	case *n == 0:
		return -1
	}
	return *n
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
func (b *builder) embedder() {
	for _, t := range b.cfg.Tiers {
		if t.Kind != KindSemanticCache && t.Kind != KindStaleCache {
			continue
		}
		if t.Cache.Embedder == hashEmbedder {
			b.emb = cache.NewHashEmbedder(cache.DefaultHashDim)
		} else {
			m := b.models[t.Cache.Embedder]
			b.emb = cache.NewOpenAIEmbedder(cache.OpenAIEmbedderConfig{Client: m.Client, Model: m.Model})
			b.embID = t.Cache.Embedder
		}
		break
	}
	if b.emb != nil && b.kb != nil {
		hc := retrieval.HybridConfig{Lexical: b.kb, Embedder: b.emb, MinRelevance: b.cfg.KnowledgeBase.MinRelevance,
			Clock: b.env.Clock, Logger: b.env.Logger}
		if b.embID == "" {
			hc.MinSimilarity = hashMinSimilarity
		}
		b.ret = retrieval.NewHybrid(hc)
	}
}

// hashMinSimilarity is the cosine a document also needs to enter a
// question's results through the hash embedder alone. Hash vectors count
// shared words and character trigrams, so a document that shares no word
// with the question stands out only through trigram and bucket overlaps,
// which reach 6 standard deviations for made-up words over testdata/kb:
// with the hash embedder, vectors re-rank what the keyword index finds,
// and only a near-duplicate enters on its own.
const hashMinSimilarity = 0.99

// tier builds tiers[i].
func (b *builder) tier(i int, tc Tier) (tiers.Tier, error) {
	switch tc.Kind {
	case KindLLM:
		var cands []tiers.Candidate
		for _, id := range tc.LLM.Models {
			cands = append(cands, b.models[id])
		}
		var ret retrieval.Retriever
		if b.ret != nil && tc.LLM.ContextDocs > 0 {
			ret = b.ret
		}
		return tiers.NewLLM(tiers.LLMConfig{Name: tc.Name, Source: tiers.Source(tc.LLM.Source), Candidates: cands,
			Retriever: ret, ContextDocs: tc.LLM.ContextDocs, SystemPrompt: tc.LLM.Prompt,
			HistoryTurns: historyTurns(tc.LLM.HistoryTurns)}), nil
	case KindRetrieval:
		return tiers.NewRetrieval(tiers.RetrievalConfig{Name: tc.Name, Retriever: b.ret, TopK: tc.Retrieval.TopK}), nil
	case KindStatic:
		return tiers.NewStatic(tc.Name, tc.Static.Message), nil
	case KindSemanticCache, KindStaleCache:
		return b.cacheTier(tc), nil
	}
	return nil, &FieldError{Path: fmt.Sprintf("tiers[%d].kind", i), Msg: fmt.Sprintf("unknown kind %q", tc.Kind)}
}

// cacheTier builds a semantic_cache or stale_cache tier. All cache tiers
// share one cache, configured by the first of them: a stale_cache serves
// what the semantic cache stored.
func (b *builder) cacheTier(tc Tier) tiers.Tier {
	if b.cache == nil {
		cc := cache.Config{Similarity: tc.Cache.Similarity, TTL: tc.Cache.TTL, MaxEntries: tc.Cache.MaxEntries,
			MaxTenants: tc.Cache.MaxTenants}
		for _, t := range b.cfg.Tiers {
			if t.Kind == KindStaleCache {
				cc.Grace = max(cc.Grace, t.Cache.Grace)
			}
		}
		if b.env.Clock != nil {
			cc.Clock = b.env.Clock
		}
		b.cache = b.newCache(cc)
	}
	var version func() uint64
	if b.kb != nil {
		version = b.kb.ContentVersion // equal on every instance holding the same documents
	}
	cc := tiers.CacheConfig{Name: tc.Name, Stale: tc.Kind == KindStaleCache, Cache: b.cache, Embedder: b.emb, KBVersion: version}
	if !cc.Stale {
		cc.StoreFrom = make([]tiers.Source, 0, len(tc.Cache.StoreFrom)) // not nil: store_from: [] stores nothing
		for _, s := range tc.Cache.StoreFrom {
			cc.StoreFrom = append(cc.StoreFrom, tiers.Source(s))
		}
	}
	return tiers.NewCache(cc)
}

func closeAll(cs []io.Closer) {
	for _, c := range cs {
		_ = c.Close()
	}
}
