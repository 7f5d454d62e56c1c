package pipeline

import (
	"context"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
)

// Status is a snapshot of the pipeline's protections, for status pages and
// metrics.
type Status struct {
	Tiers         []TierStatus       `json:"tiers"`
	Breakers      []breaker.Snapshot `json:"breakers"`
	Bulkheads     []BulkheadStatus   `json:"bulkheads"`
	Caches        []CacheStatus      `json:"caches"`
	KnowledgeBase KnowledgeBaseInfo  `json:"knowledge_base"`
	RateLimit     RateLimitConfig    `json:"rate_limit"`
	Store         StoreStatus        `json:"store"`
	Cooldowns     []CooldownStatus   `json:"cooldowns"`
	Probes        []ProbeStatus      `json:"probes"` // the models probed actively, by ID
}

// CooldownStatus is a model skipped after a 429, until Until.
type CooldownStatus struct {
	Model string    `json:"model"`
	Until time.Time `json:"until"`
}

// TierStatus describes one tier of the chain.
type TierStatus struct {
	Name    string        `json:"name"`
	Source  string        `json:"source"`
	Timeout time.Duration `json:"timeout"`
	Model   bool          `json:"model"`
	Models  []string      `json:"models,omitempty"` // an llm tier's candidate IDs, in order
}

// CacheStatus is the size of a cache tier and, for a semantic cache
// shared with other instances, how the sharing goes.
type CacheStatus struct {
	Tier    string             `json:"tier"`
	Entries int                `json:"entries"`
	Shared  *SharedCacheStatus `json:"shared,omitempty"`
}

// KnowledgeBaseInfo tells which version of the knowledge base is loaded
// and, with a hybrid retriever, whether its document vectors are ready.
type KnowledgeBaseInfo struct {
	Loaded  bool         `json:"loaded"`
	Version uint64       `json:"version"`
	Vectors *VectorsInfo `json:"vectors,omitempty"`
}

// VectorsInfo tells whether the document vectors of the knowledge base's
// current version are ready; until they are, questions are ranked by
// words alone.
type VectorsInfo struct {
	Ready    bool      `json:"ready"`
	Version  uint64    `json:"version"`         // the version they are (being) computed for
	Done     int       `json:"done"`            // documents embedded so far
	Total    int       `json:"total"`           // documents of that version
	Error    string    `json:"error,omitempty"` // the last failure, while not ready
	FailedAt time.Time `json:"failed_at,omitzero"`
}

// StoreStatus tells where breaker state lives and whether it is reachable.
type StoreStatus struct {
	Kind    string `json:"kind"` // "memory" or "redis"
	Healthy bool   `json:"healthy"`
}

// WaitVectors waits until the document vectors of the knowledge base's
// current version are ready (nil at once without Options.Vectors), their
// computation fails (its error), or ctx is done.
func (p *Pipeline) WaitVectors(ctx context.Context) error {
	if p.vectors == nil {
		return nil
	}
	return p.vectors.WaitVectors(ctx)
}

// sizer is a tier that knows how many entries it holds (the caches).
type sizer interface{ Len() int }

// tenantSizer is a tier that knows how many entries a tenant holds.
type tenantSizer interface{ TenantLen(tenant string) int }

// healther is a breaker store that knows whether it is reachable.
type healther interface{ Healthy() bool }

// Status returns a snapshot of the pipeline's breakers, bulkheads, caches,
// knowledge base, rate limits and state store.
func (p *Pipeline) Status() Status {
	st := Status{
		Breakers:  p.breakers.Snapshots(),
		RateLimit: p.rlConfig,
		Store:     StoreStatus{Kind: p.store, Healthy: true},
	}
	for _, s := range p.stages {
		ts := TierStatus{Name: s.name, Source: string(s.source), Timeout: s.Timeout, Model: s.Model}
		if cl, ok := s.Tier.(candidateLister); ok {
			for _, c := range cl.Candidates() {
				ts.Models = append(ts.Models, c.ID)
			}
		}
		st.Tiers = append(st.Tiers, ts)
		if s.bulk != nil {
			st.Bulkheads = append(st.Bulkheads, s.bulk.status(s.name))
		}
		if c, ok := s.Tier.(sizer); ok {
			st.Caches = append(st.Caches, CacheStatus{Tier: s.name, Entries: c.Len(), Shared: sharedStatus(s.Tier)})
		}
	}
	if p.kb != nil {
		st.KnowledgeBase = KnowledgeBaseInfo{Loaded: true, Version: p.kb.Version()}
	}
	if p.vectors != nil {
		vs := p.vectors.VectorStatus()
		st.KnowledgeBase.Vectors = &VectorsInfo{Ready: vs.Ready, Version: vs.Version, Done: vs.Done, Total: vs.Total, FailedAt: vs.Failed}
		if vs.Err != nil {
			st.KnowledgeBase.Vectors.Error = vs.Err.Error()
		}
	}
	if h, ok := p.storeHealth.(healther); ok {
		st.Store.Healthy = h.Healthy()
	}
	st.Cooldowns = p.cool.list(p.clock.Now())
	st.Probes = p.probeStatus()
	return st
}

// TenantCaches returns, for each cache tier, the number of entries
// tenant holds there: the figures a tenant may see of the caches.
func (p *Pipeline) TenantCaches(tenant string) []CacheStatus {
	var out []CacheStatus
	for _, s := range p.stages {
		if c, ok := s.Tier.(tenantSizer); ok {
			out = append(out, CacheStatus{Tier: s.name, Entries: c.TenantLen(tenant)})
		}
	}
	return out
}

// EndCooldown ends the cooldown of model id (a candidate's ID), so that
// it is called again at once, and reports whether it was cooling down
// here. With Options.Cluster the end is announced, and the cooldown ends
// on every instance.
func (p *Pipeline) EndCooldown(id string) bool {
	if p.cluster != nil {
		p.cluster.ShareCooldown(id, time.Time{})
	}
	return p.cool.end(id, p.clock.Now())
}
