package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
)

// Errors returned by Ask.
var (
	// ErrRejected reports a question refused by a rate limit with
	// on_limit: reject.
	ErrRejected = errors.New("pipeline: rate limited")
	// ErrExhausted reports that no tier answered; it happens only in a
	// pipeline without a static tier.
	ErrExhausted = errors.New("pipeline: no tier answered")
	// ErrClosed reports a question asked after Close.
	ErrClosed = errors.New("pipeline: closed")
	// ErrNoKnowledgeBase reports a reload asked of a pipeline without a
	// knowledge base.
	ErrNoKnowledgeBase = errors.New("pipeline: no knowledge base")
)

// Defaults of Options.
const (
	defaultRequestTimeout   = 12 * time.Second
	defaultCooldown         = 10 * time.Second
	defaultRetrievalTimeout = time.Second
)

// Stage is one tier of a pipeline with the settings of its guards.
type Stage struct {
	Tier tiers.Tier
	// Timeout bounds one call of the tier; 0 means only the request's
	// remaining budget bounds it.
	Timeout time.Duration
	// Reserve is the time the tiers before this one leave for it out of
	// the request's budget. 0 means: none for a static tier; for a model
	// tier min(Timeout, RequestTimeout/4); for others min(Timeout,
	// RequestTimeout/10, 1s) (a zero Timeout counting as RequestTimeout).
	Reserve time.Duration
	// Breaker configures the tier's breaker "tier/<name>" and, for an LLM
	// tier, the breakers "model/<id>" of its candidates (the first tier
	// naming a model configures its breaker). A nil Clock means the
	// pipeline's clock.
	Breaker breaker.Config
	// Bulkhead, if set, limits the calls in flight into the tier.
	Bulkhead *BulkheadConfig
	// Model marks a model tier: skipped for a question over a rate limit
	// unless RateLimitConfig.Reject refuses it.
	Model bool
	// Stream configures how the tier streams in Pipeline.Stream, if it is
	// a tiers.StreamTier.
	Stream StreamConfig
	// HedgeAfter, if positive, hedges a model stage with the next model
	// stage after that long without an answer (see hedge.go); 0: never.
	// When neither answers, the stages after this one go on in order,
	// the hedging one left out unless a guard skipped its call.
	HedgeAfter time.Duration
	// HedgeBudget caps the hedges of a healthy stage to this share of its
	// calls (see hedgeBudget); default 0.1, at most 1.
	HedgeBudget float64
}

// KnowledgeBase is what the pipeline needs of a knowledge base: its version
// (for Status and cache invalidation) and a reload.
type KnowledgeBase interface {
	Version() uint64
	Reload() error
}

// Vectors is a retriever that computes document vectors in the
// background, as retrieval.Hybrid does.
type Vectors interface {
	UseEmbedder(cache.Embedder)
	StartVectors()
	VectorStatus() retrieval.VectorStatus
	WaitVectors(ctx context.Context) error
}

// Options configures New. Zero fields take the defaults written beside
// them.
type Options struct {
	Tiers []Stage
	// RequestTimeout is the overall deadline of a question (a shorter
	// deadline on Ask's context wins); default 12s.
	RequestTimeout time.Duration
	// Clock tells the time of breakers, cooldowns and rate limits; nil
	// means clock.System. Call timeouts run on real time.
	Clock clock.Clock
	// Breakers holds the breakers; nil means a new in-memory registry.
	Breakers *breaker.Registry
	// Observer receives events; nil drops them.
	Observer Observer
	// RateLimit configures admission; the zero value admits everything.
	RateLimit RateLimitConfig
	// MaxTenants bounds the per-tenant rate limiters kept; default 10000.
	MaxTenants int
	// Embedder, if set, embeds each question once for the semantic cache
	// and a hybrid retriever (tiers.Memo).
	Embedder cache.Embedder
	// EmbedderModel, if set, names the model behind Embedder: its calls
	// then go through the breaker "model/<id>", with the default breaker
	// settings, and its cooldown, like any model call. Leave it empty for
	// an embedder that needs no service (the hash embedder).
	EmbedderModel string
	// EmbedderCooldown is how long the embedding model is skipped after a
	// 429 without Retry-After; default Cooldown.
	EmbedderCooldown time.Duration
	// Rerank, if set, reranks each question's documents once, in the Memo
	// (tiers.Memo.Rerank), through the breaker "model/<Rerank.Model.ID>"
	// (the chat candidate's of that id, else one with the default
	// settings) and its cooldown, each call and skip recorded as an
	// attempt of tier "rerank"; the retriever's order stands when it
	// fails. It is skipped as over_quota, like every model call, for a
	// question over its rate limit.
	Rerank *tiers.Rerank
	// Vectors, if set, computes document vectors in the background (a
	// retrieval.Hybrid over the knowledge base): New hands it Embedder,
	// through the breaker and cooldown of EmbedderModel like the
	// questions' embeddings but with no question's attempts, starts it,
	// and Status reports whether the vectors are ready.
	Vectors Vectors
	// RetrievalTimeout is the time limit of a question's retrieval, apart
	// from the time limit of the tier that asks for the documents first
	// (tiers.Memo.RetrievalTimeout); default: the Timeout of the first
	// retrieval stage, or 1s; negative: the asking tier's time limit
	// bounds the retrieval.
	RetrievalTimeout time.Duration
	// Condenser, if set, rewrites a question with history into a
	// standalone question before its documents are retrieved
	// (tiers.Memo.Condense). The calls of its model go through the breaker
	// "model/<id>" (the chat candidate's of that id, else one with the
	// default settings) and its cooldown, each recorded as an attempt of
	// tier "condense"; when it fails or is skipped, the question is
	// searched for with the words of its earlier user turns.
	Condenser *tiers.Condenser
	// KnowledgeBase, if set, is reported by Status and reloaded by
	// ReloadKnowledgeBase, and its version when a question starts is the
	// one the question's Memo carries (tiers.Memo.KBVersion): an answer
	// built across a reload is not cached under the new version.
	KnowledgeBase KnowledgeBase
	// Cooldown is how long a model is skipped after a 429 without
	// Retry-After when its Candidate sets none; default 10s.
	Cooldown time.Duration
	// StoreKind names where breaker state lives, for Status; default
	// "memory".
	StoreKind string
	// Store, if it has a Healthy() bool method, tells Status whether the
	// shared state store is reachable.
	Store breaker.Store
	// Limiter, if set, applies RateLimit across instances; the local
	// limiters stand in when it cannot answer.
	Limiter Limiter
	// Cluster, if set, shares cooldowns (announced when they start, ended
	// everywhere by EndCooldown) and reloads (ReloadCluster) with the
	// other instances.
	Cluster Cluster
	// Closers are closed by Close, after the questions in flight end.
	Closers []io.Closer
	// Probes configures active probing, per model: see Probe.
	Probes []Probe
	// Tracer, if set, records a span per stage call ("tier/<name>") and
	// per model call ("model/<id>"), children of the span in the
	// question's context (see the package doc); nil traces nothing.
	Tracer trace.Tracer
}

// Pipeline runs questions through an ordered list of guarded tiers. It is
// safe for concurrent use.
type Pipeline struct {
	stages      []*stage
	timeout     time.Duration
	clock       clock.Clock
	breakers    *breaker.Registry
	models      map[string]*breaker.Breaker // "model/<id>" breakers by candidate ID; read-only after New
	obs         Observer
	limits      *admission
	rlConfig    RateLimitConfig
	embedder    cache.Embedder   // Options.Embedder, as it is
	embedModel  tiers.Candidate  // the model behind embedder: its ID and cooldown
	embedGuard  *breaker.Breaker // embedModel's breaker; nil: the embedder needs no guard
	condenser   *tiers.Condenser // Options.Condenser
	condenseB   *breaker.Breaker // the condensing model's breaker
	memoK       int
	rerank      *tiers.Rerank    // Options.Rerank, when a tier retrieves documents
	rerankB     *breaker.Breaker // the rerank model's breaker
	rerankK     int              // documents retrieved for the rerank: max(memoK, Rerank.Candidates)
	vectors     Vectors
	retrieveFor time.Duration // Options.RetrievalTimeout, defaults filled in
	kb          KnowledgeBase
	kbCacheVer  func() uint64 // cacheVersion(kb), when kb is set
	cooldown    time.Duration
	cool        cooldowns
	store       string
	storeHealth breaker.Store
	cluster     Cluster // Options.Cluster; nil: this instance alone
	closers     []io.Closer
	flights     flightGroup
	streams     streamFlights      // the stream flights taking callers
	inflight    inflightGate       // the questions in flight, until Close
	tracer      trace.Tracer       // nil: no spans
	probers     map[string]*prober // by model ID; read-only after New
	probing     sync.WaitGroup     // the probers' goroutines
	stopProbers context.CancelFunc // ends them; nil without probers
}

// stage is a Stage ready to run: its tier with the guards composed around
// it (see compose), and what the guards need to know of it.
type stage struct {
	Stage
	name     string
	source   tiers.Source
	streams  bool // the tier is a tiers.StreamTier
	breaker  *breaker.Breaker
	bulk     *bulkhead
	after    time.Duration // the reserves of the stages after this one
	cacheTyp string        // EventCache's Reason on a hit: "hit" or "stale" for cache tiers, else ""
	// lastResort marks a static tier: the answer of last resort, which its
	// breaker never takes out of the chain (a breaker tripped by hand or
	// through a shared store would otherwise turn every failure into
	// ErrExhausted).
	lastResort bool
	last       bool         // the last stage, called whatever the budget leaves
	hedgeTo    *stage       // the stage hedging this one (Stage.HedgeAfter); nil: not hedged
	hb         *hedgeBudget // the hedges' budget, when hedged
	guard      quotaGuard   // the outermost of the stage's guards (see compose)
}

// docsWanter is a tier that retrieves documents: the Memo retrieves the
// most any tier wants, once.
type docsWanter interface{ DocsWanted() int }

// candidateLister is a tier with model candidates (the llm tier).
type candidateLister interface{ Candidates() []tiers.Candidate }

// New returns a pipeline running opts.Tiers in order.
func New(opts Options) (*Pipeline, error) {
	if len(opts.Tiers) == 0 {
		return nil, errors.New("pipeline: no tiers")
	}
	p := &Pipeline{
		timeout:     cmp.Or(max(opts.RequestTimeout, 0), defaultRequestTimeout),
		clock:       opts.Clock,
		breakers:    opts.Breakers,
		models:      map[string]*breaker.Breaker{},
		obs:         opts.Observer,
		limits:      newAdmission(opts.RateLimit, opts.MaxTenants),
		rlConfig:    opts.RateLimit,
		embedder:    opts.Embedder,
		kb:          opts.KnowledgeBase,
		cooldown:    cmp.Or(max(opts.Cooldown, 0), defaultCooldown),
		store:       cmp.Or(opts.StoreKind, "memory"),
		storeHealth: opts.Store,
		cluster:     opts.Cluster,
		closers:     opts.Closers,
		tracer:      opts.Tracer,
	}
	p.cool.until = map[string]time.Time{}
	if p.kb != nil {
		p.kbCacheVer = cacheVersion(p.kb)
	}
	var err error
	if p.probers, err = newProbers(opts.Probes); err != nil {
		return nil, err
	}
	p.inflight.drained = make(chan struct{})
	p.limits.shared = opts.Limiter
	if p.clock == nil {
		p.clock = clock.System
	}
	if p.breakers == nil {
		p.breakers = breaker.NewRegistry(breaker.Config{Clock: p.clock, OnStateChange: p.breakerChanged})
	}
	if p.embedder != nil && opts.EmbedderModel != "" {
		// The embedder's breaker has the default settings, shared through
		// the same store as the tiers' breakers.
		cfg := breaker.Config{Store: opts.Tiers[0].Breaker.Store}
		p.embedModel = tiers.Candidate{ID: opts.EmbedderModel, Cooldown: opts.EmbedderCooldown}
		p.embedGuard = p.breakers.GetWith("model/"+opts.EmbedderModel, p.modelConfig(opts.EmbedderModel, cfg))
	}
	names := map[string]bool{}
	for i, st := range opts.Tiers {
		if st.Tier == nil {
			return nil, fmt.Errorf("pipeline: tiers[%d]: no tier", i)
		}
		name := st.Tier.Name()
		if name == "" || names[name] {
			return nil, fmt.Errorf("pipeline: tiers[%d]: name %q empty or used twice", i, name)
		}
		names[name] = true
		p.stages = append(p.stages, p.newStage(st, i == len(opts.Tiers)-1))
	}
	p.retrieveFor = retrievalTimeout(opts)
	if opts.Vectors != nil {
		p.vectors = opts.Vectors
		p.vectors.UseEmbedder(p.documentEmbedder())
		p.vectors.StartVectors()
	}
	if rr := opts.Rerank; rr != nil && p.memoK > 0 {
		p.rerank = rr
		p.rerankB = p.auxBreaker(rr.Model.ID, opts.Tiers[0].Breaker.Store)
		p.rerankK = max(p.memoK, cmp.Or(max(rr.Candidates, 0), tiers.DefaultRerankCandidates))
	}
	if opts.Condenser != nil {
		p.condenser = opts.Condenser
		p.condenseB = p.auxBreaker(opts.Condenser.Model().ID, opts.Tiers[0].Breaker.Store)
	}
	p.readyHedges()
	var after time.Duration
	for i := len(p.stages) - 1; i >= 0; i-- {
		p.stages[i].after = after
		after += p.reserve(p.stages[i])
	}
	p.startProbers(opts.Tiers[0].Breaker.Store)
	return p, nil
}

// newStage readies st, the last stage if last: its breakers, its bulkhead
// and its guards.
func (p *Pipeline) newStage(st Stage, last bool) *stage {
	s := &stage{Stage: st, name: st.Tier.Name(), source: st.Tier.Source(), last: last}
	_, s.streams = st.Tier.(tiers.StreamTier)
	s.lastResort = s.source == tiers.SourceStatic
	cfg := p.breakerConfig(st.Breaker)
	s.breaker = p.breakers.GetWith("tier/"+s.name, cfg)
	if st.Bulkhead != nil {
		s.bulk = newBulkhead(*st.Bulkhead)
	}
	if cl, ok := st.Tier.(candidateLister); ok {
		for _, c := range cl.Candidates() {
			if p.models[c.ID] == nil {
				p.models[c.ID] = p.breakers.GetWith("model/"+c.ID, p.modelConfig(c.ID, st.Breaker))
			}
		}
	}
	if dw, ok := st.Tier.(docsWanter); ok {
		p.memoK = max(p.memoK, dw.DocsWanted())
	}
	switch s.source {
	case tiers.SourceCache:
		s.cacheTyp = "hit"
	case tiers.SourceStaleCache:
		s.cacheTyp = "stale"
	}
	s.guard = compose(s)
	return s
}

// breakerConfig fills the pipeline's clock and state-change callback into c.
func (p *Pipeline) breakerConfig(c breaker.Config) breaker.Config {
	if c.Clock == nil {
		c.Clock = p.clock
	}
	if c.OnStateChange == nil {
		c.OnStateChange = p.breakerChanged
	}
	return c
}

// reserve returns the time kept for s by the stages before it.
func (p *Pipeline) reserve(s *stage) time.Duration {
	if s.Reserve > 0 {
		return s.Reserve
	}
	if s.lastResort {
		return 0
	}
	t := s.Timeout
	if t <= 0 {
		t = p.timeout
	}
	if s.Model {
		return min(t, p.timeout/4)
	}
	return min(t, p.timeout/10, time.Second)
}
