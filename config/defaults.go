package config

import (
	"cmp"
	"slices"
	"time"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// hashEmbedder names the built-in embedder, which needs no service.
const hashEmbedder = "hash"

// defaultTimeouts holds each tier kind's default timeout.
var defaultTimeouts = map[string]time.Duration{
	KindSemanticCache: 300 * time.Millisecond,
	KindStaleCache:    300 * time.Millisecond,
	KindLLM:           10 * time.Second,
	KindRetrieval:     time.Second,
	KindStatic:        100 * time.Millisecond,
}

// Defaults that are the pipeline's too.
const (
	defaultRequestTimeout = 12 * time.Second // server.request_timeout
	defaultCooldown       = 10 * time.Second // models.<id>.cooldown
)

// The values of rate_limit.on_limit and of a tier's on_stream_break.
const (
	onLimitDegrade  = "degrade"
	onLimitReject   = "reject"
	onBreakNote     = "note"
	onBreakContinue = "continue"
)

// DefaultQueueTimeout is how long a call may wait in a configured
// bulkhead's queue when bulkhead.queue_timeout is not set.
const DefaultQueueTimeout = 2 * time.Second

// Defaults fills the zero fields of c with their documented defaults. It
// leaves set values alone, even bad ones: Validate reports those. The
// models map and the tiers slice are replaced by filled copies, so a
// Config shared with other goroutines (Build's caller's) is not written.
// The server fields the HTTP server defaults itself stay zero.
func (c *Config) Defaults() {
	setIfZero(&c.Server.RequestTimeout, defaultRequestTimeout)
	if c.Models != nil {
		models := make(map[string]Model, len(c.Models))
		for id, m := range c.Models {
			setIfZero(&m.Kind, ModelChat)
			setIfZero(&m.Model, id)
			setIfZero(&m.MaxTokens, 512)
			setIfZero(&m.Cooldown, defaultCooldown)
			if m.Probe != nil {
				pr := *m.Probe // not the caller's
				setIfZero(&pr.Interval, pipeline.DefaultProbeInterval)
				setIfZero(&pr.Timeout, pipeline.DefaultProbeTimeout)
				m.Probe = &pr
			}
			models[id] = m
		}
		c.Models = models
	}
	if rr := c.KnowledgeBase.Rerank; rr != nil {
		r := *rr // not the caller's: Build gets its Config by value
		setIfZero(&r.Candidates, tiers.DefaultRerankCandidates)
		setIfZero(&r.Timeout, tiers.DefaultRerankTimeout)
		c.KnowledgeBase.Rerank = &r
	}
	if cd := c.KnowledgeBase.Condense; cd != nil {
		d := *cd // not the caller's
		setIfZero(&d.Timeout, tiers.DefaultCondenseTimeout)
		c.KnowledgeBase.Condense = &d
	}
	setIfZero(&c.Redis.Prefix, "ragfuse")
	setIfZero(&c.Tracing.ServiceName, "ragfuse")
	setIfZero(&c.Tracing.SampleRatio, 1)
	setIfZero(&c.KnowledgeBase.Timeout, c.retrievalTimeout())
	rl := &c.RateLimit
	setIfZero(&rl.OnLimit, onLimitDegrade)
	if rl.GlobalRPS > 0 {
		setIfZero(&rl.GlobalBurst, max(1, int(rl.GlobalRPS)))
	}
	if rl.TenantRPS > 0 {
		setIfZero(&rl.TenantBurst, max(1, int(rl.TenantRPS)))
	}
	c.Tiers = slices.Clone(c.Tiers)
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
			t.LLM.defaults(llms == 0)
			llms++
			setIfZero(&t.Name, t.LLM.Source)
		case KindSemanticCache, KindStaleCache:
			t.Cache.defaults(t.Kind)
		case KindRetrieval:
			setIfZero(&t.Retrieval.TopK, 3)
		}
		if t.Kind == KindSemanticCache {
			setIfZero(&t.Name, "cache")
		}
		setIfZero(&t.Name, t.Kind)
	}
}

// retrievalTimeout is the default of knowledge_base.timeout: the first
// retrieval tier's timeout (its default when unset), or 1s.
func (c *Config) retrievalTimeout() time.Duration {
	for _, t := range c.Tiers {
		if t.Kind == KindRetrieval {
			return cmp.Or(t.Timeout, defaultTimeouts[KindRetrieval])
		}
	}
	return defaultTimeouts[KindRetrieval]
}

// defaults fills an llm tier's settings; first tells whether it is the
// first llm tier of the chain.
func (l *LLMTier) defaults(first bool) {
	if first {
		setIfZero(&l.Source, string(tiers.SourcePrimary))
	} else {
		setIfZero(&l.Source, string(tiers.SourceFallback))
	}
	setIfZero(&l.ContextDocs, 5)
	if l.HistoryTurns == nil {
		n := tiers.DefaultHistoryTurns
		l.HistoryTurns = &n
	}
	setIfZero(&l.OnStreamBreak, onBreakNote)
	setIfZero(&l.HedgeBudget, 0.1)
}

// defaults fills a cache tier's settings for its kind.
func (c *CacheTier) defaults(kind string) {
	setIfZero(&c.Embedder, hashEmbedder)
	setIfZero(&c.Similarity, 0.92)
	setIfZero(&c.TTL, 24*time.Hour)
	setIfZero(&c.MaxEntries, 10000)
	setIfZero(&c.MaxTenants, 10000)
	if kind == KindSemanticCache && c.StoreFrom == nil {
		c.StoreFrom = []string{string(tiers.SourcePrimary)}
	}
}

func setIfZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}
