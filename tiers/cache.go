package tiers

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/retrieval"
)

// CacheConfig configures a cache tier (NewCache). Zero fields take the
// defaults written beside them.
type CacheConfig struct {
	Name     string         // default "cache", or "stale_cache" with Stale
	Cache    *cache.Cache   // required
	Embedder cache.Embedder // for similarity hits; without it only exact matches hit
	// Stale makes the stale_cache tier (stale-if-error): placed after the
	// model tiers, it is reached only when all of them failed, serves an
	// entry that may have expired within the cache's grace period, with
	// Source SourceStaleCache, and writes nothing back.
	Stale bool
	// StoreFrom lists the sources whose answers are written back; default
	// [SourcePrimary]; an empty list that is not nil stores nothing. Cache
	// sources are never written back.
	StoreFrom []Source
	// KBVersion returns the current knowledge-base version; default: always 0.
	KBVersion func() uint64
}

// Cache is a cache tier: the semantic_cache tier, or with CacheConfig.Stale
// the stale_cache tier, over a cache.Cache the two may share. It embeds
// the question (once per question, through Query.Memo) and answers from
// the tenant's entries. As a Rememberer the semantic_cache tier writes
// back complete answers from the StoreFrom sources that were built on the
// knowledge base current when the question started. A Cache is safe for
// concurrent use.
type Cache struct {
	cfg CacheConfig
}

var (
	_ Tier       = (*Cache)(nil)
	_ Rememberer = (*Cache)(nil)
)

// errNoCache reports a cache tier built without a cache.
var errNoCache = errors.New("no cache configured")

// NewCache returns a cache tier.
func NewCache(cfg CacheConfig) *Cache {
	if cfg.Name == "" {
		cfg.Name = "cache"
		if cfg.Stale {
			cfg.Name = "stale_cache"
		}
	}
	if cfg.StoreFrom == nil {
		cfg.StoreFrom = []Source{SourcePrimary}
	}
	cfg.StoreFrom = slices.Clone(cfg.StoreFrom)
	if cfg.KBVersion == nil {
		cfg.KBVersion = func() uint64 { return 0 }
	}
	return &Cache{cfg: cfg}
}

// Name returns the tier's name.
func (c *Cache) Name() string { return c.cfg.Name }

// Source returns SourceCache, or SourceStaleCache for a stale tier.
func (c *Cache) Source() Source {
	if c.cfg.Stale {
		return SourceStaleCache
	}
	return SourceCache
}

// Len returns the number of entries across tenants, expired ones in grace
// included.
func (c *Cache) Len() int {
	if c.cfg.Cache == nil {
		return 0
	}
	return c.cfg.Cache.Size()
}

// TenantLen returns the number of entries of tenant, expired ones in grace
// included.
func (c *Cache) TenantLen(tenant string) int {
	if c.cfg.Cache == nil {
		return 0
	}
	return c.cfg.Cache.Len(tenant)
}

// Answer returns the cached answer to q (for a stale tier, also one
// expired within the grace period), or an *Error of KindMiss, at once for
// a question with history: its answer depends on its conversation. If the
// embedder fails, an exact match of the question may still answer;
// otherwise the semantic_cache tier returns the embedding error, and the
// stale tier misses.
func (c *Cache) Answer(ctx context.Context, q Query) (Answer, error) {
	if err := ctx.Err(); err != nil {
		return Answer{}, err
	}
	if c.cfg.Cache == nil {
		return Answer{}, &Error{Kind: KindOther, Tier: c.cfg.Name, Err: errNoCache}
	}
	if len(q.History) > 0 {
		return Answer{}, &Error{Kind: KindMiss, Tier: c.cfg.Name, Err: errConversation}
	}
	var kb uint64
	if !c.cfg.Stale {
		kb = q.Memo.KBVersion(c.cfg.KBVersion) // the version the question starts on
	}
	var vec []float32
	var embErr error
	if c.cfg.Embedder != nil || q.Memo != nil && q.Memo.Embedder != nil {
		vec, embErr = q.Memo.Embedding(ctx, c.cfg.Embedder, q.Question)
	}
	var e cache.Entry
	var err error
	if c.cfg.Stale {
		e, err = c.cfg.Cache.GetStale(q.Tenant, q.Question, vec, c.cfg.KBVersion())
	} else {
		e, err = c.cfg.Cache.Get(q.Tenant, q.Question, vec, kb)
	}
	switch {
	case err == nil:
		return answerFromEntry(e, c.Source()), nil
	case embErr != nil && !c.cfg.Stale:
		return Answer{}, c.embeddingError(ctx, embErr)
	}
	return Answer{}, &Error{Kind: KindMiss, Tier: c.cfg.Name, Err: err}
}

// embeddingError returns err as a tier error of c.
func (c *Cache) embeddingError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var te *Error
	if errors.As(err, &te) {
		return err
	}
	return &Error{Kind: KindOf(err), Tier: c.cfg.Name, Err: err}
}

// SharedStatus reports how the cache is shared with other instances
// (cache.Cache.ShareStatus); false for a cache of this process alone, and
// for a stale tier, which only reads what the semantic_cache tier shares.
func (c *Cache) SharedStatus() (cache.ShareStatus, bool) {
	if c.cfg.Stale || c.cfg.Cache == nil {
		return cache.ShareStatus{}, false
	}
	return c.cfg.Cache.ShareStatus()
}

// Invalidate drops the entries not built on knowledge-base version
// current (see cache.Cache.Invalidate) and returns how many it dropped.
func (c *Cache) Invalidate(current uint64) int {
	if c.cfg.Cache == nil {
		return 0
	}
	return c.cfg.Cache.Invalidate(current)
}

// Remember writes a back to the cache when it qualifies: c is not a stale
// tier, q has no history, a's source is in StoreFrom, it is complete (not Interrupted, not
// empty), it was not made after the question's retrieval failed (its Memo
// remembers that), and the knowledge base has not changed since the
// question started: since the version its Memo holds (the pipeline takes
// it when the question starts), else since the question reached Answer. A
// question that carries no version yet is stored under the current one.
func (c *Cache) Remember(ctx context.Context, q Query, a Answer) {
	if c.cfg.Stale || c.cfg.Cache == nil || len(q.History) > 0 || a.Interrupted || strings.TrimSpace(a.Text) == "" ||
		a.Source == SourceCache || a.Source == SourceStaleCache || !slices.Contains(c.cfg.StoreFrom, a.Source) {
		return
	}
	if q.Memo.retrievalFailed() {
		return // made without the documents it needed: the retrieval failed
	}
	kb := c.cfg.KBVersion()
	if q.Memo.KBVersion(c.cfg.KBVersion) != kb {
		return // built on a knowledge base that has since been reloaded
	}
	vec, err := q.Memo.Embedding(ctx, c.cfg.Embedder, q.Question)
	if err != nil {
		return
	}
	_ = c.cfg.Cache.Put(q.Tenant, q.Question, vec, cache.Entry{
		Text:      a.Text,
		Model:     a.Model,
		Source:    string(a.Source),
		Docs:      docRefs(a.Docs),
		KBVersion: kb,
	})
}

func answerFromEntry(e cache.Entry, src Source) Answer {
	a := Answer{Text: e.Text, Source: src, Model: e.Model}
	for _, d := range e.Docs {
		a.Docs = append(a.Docs, retrieval.Doc{ID: d.ID, Title: d.Title})
	}
	return a
}

func docRefs(docs []retrieval.Doc) []cache.DocRef {
	var refs []cache.DocRef
	for _, d := range docs {
		refs = append(refs, cache.DocRef{ID: d.ID, Title: d.Title})
	}
	return refs
}
