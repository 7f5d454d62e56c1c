package api

import (
	"sync"
	"sync/atomic"

	"github.com/ragfuse/ragfuse/pipeline"
)

// CacheInfo is a cache tier in GET /v1/status: its entries, and its
// lookups since the server started.
type CacheInfo struct {
	Tier    string   `json:"tier"`
	Entries int      `json:"entries"`
	Lookups int64    `json:"lookups"`
	Hits    int64    `json:"hits"`               // lookups that answered (hit, or stale for a stale_cache tier)
	HitRate *float64 `json:"hit_rate,omitempty"` // hits / lookups; absent before the first lookup
	// Shared, for a semantic cache shared through Redis, tells Redis's
	// health, the loads of the live entries and the queue of writes.
	Shared *pipeline.SharedCacheStatus `json:"shared,omitempty"`
}

// cacheTallies counts each cache tier's lookups and hits. The zero value
// is ready; it is safe for concurrent use.
type cacheTallies struct {
	m sync.Map // tier -> *cacheTally
}

type cacheTally struct{ lookups, hits atomic.Int64 }

// add counts one lookup of tier, a hit if hit.
func (c *cacheTallies) add(tier string, hit bool) {
	v, ok := c.m.Load(tier)
	if !ok {
		v, _ = c.m.LoadOrStore(tier, &cacheTally{})
	}
	t := v.(*cacheTally)
	t.lookups.Add(1)
	if hit {
		t.hits.Add(1)
	}
}

// info returns the status of cache tier cs with its lookups.
func (c *cacheTallies) info(cs pipeline.CacheStatus) CacheInfo {
	ci := CacheInfo{Tier: cs.Tier, Entries: cs.Entries, Shared: cs.Shared}
	if v, ok := c.m.Load(cs.Tier); ok {
		t := v.(*cacheTally)
		ci.Hits, ci.Lookups = t.hits.Load(), t.lookups.Load()
	}
	if ci.Lookups > 0 {
		r := roundScore(float64(ci.Hits) / float64(ci.Lookups))
		ci.HitRate = &r
	}
	return ci
}
