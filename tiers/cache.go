package tiers

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/retrieval"
)

// SemanticCacheConfig configures a SemanticCache. Zero fields take the
// defaults written beside them.
type SemanticCacheConfig struct {
	Name     string         // default "cache"
	Cache    *cache.Cache   // required
	Embedder cache.Embedder // required for similarity hits; without it only exact matches hit
	// StoreFrom lists the sources whose answers are written back; default
	// [SourcePrimary]. Cache sources are never written back.
	StoreFrom []Source
	// KBVersion returns the current knowledge-base version; default: always 0.
	KBVersion func() uint64
}

// SemanticCache is the semantic_cache tier: it embeds the question (once per
// question, through Query.Memo) and answers from the tenant's cache entries.
// As a Rememberer it writes back complete answers from the StoreFrom sources
// that were built on the knowledge base current when the question started.
// A SemanticCache is safe for concurrent use.
type SemanticCache struct {
	cfg SemanticCacheConfig
}

var (
	_ Tier       = (*SemanticCache)(nil)
	_ Rememberer = (*SemanticCache)(nil)
	_ Tier       = (*StaleCache)(nil)
)

// errNoCache reports a cache tier built without a cache.
var errNoCache = errors.New("no cache configured")

// NewSemanticCache returns a SemanticCache.
func NewSemanticCache(cfg SemanticCacheConfig) *SemanticCache {
	if cfg.Name == "" {
		cfg.Name = "cache"
	}
	if cfg.StoreFrom == nil {
		cfg.StoreFrom = []Source{SourcePrimary}
	}
	cfg.StoreFrom = slices.Clone(cfg.StoreFrom)
	if cfg.KBVersion == nil {
		cfg.KBVersion = func() uint64 { return 0 }
	}
	return &SemanticCache{cfg: cfg}
}

// Name returns the tier's name.
func (s *SemanticCache) Name() string { return s.cfg.Name }

// Source returns SourceCache.
func (s *SemanticCache) Source() Source { return SourceCache }

// Len returns the number of entries across tenants.
func (s *SemanticCache) Len() int {
	if s.cfg.Cache == nil {
		return 0
	}
	return s.cfg.Cache.Size()
}

// Answer returns the cached answer to q, or an *Error of KindMiss. If the
// embedder fails, an exact match of the question may still answer;
// otherwise the embedding error is returned.
func (s *SemanticCache) Answer(ctx context.Context, q Query) (Answer, error) {
	if err := ctx.Err(); err != nil {
		return Answer{}, err
	}
	if s.cfg.Cache == nil {
		return Answer{}, &Error{Kind: KindOther, Tier: s.cfg.Name, Err: errNoCache}
	}
	kb := q.Memo.KBVersion(s.cfg.KBVersion) // the version the question starts on
	var vec []float32
	var embErr error
	if s.cfg.Embedder != nil || q.Memo != nil && q.Memo.Embedder != nil {
		vec, embErr = q.Memo.Embedding(ctx, s.cfg.Embedder, q.Question)
	}
	e, err := s.cfg.Cache.Get(q.Tenant, q.Question, vec, kb)
	if err == nil {
		return answerFromEntry(e, SourceCache), nil
	}
	if embErr != nil {
		return Answer{}, s.embeddingError(ctx, embErr)
	}
	return Answer{}, &Error{Kind: KindMiss, Tier: s.cfg.Name, Err: err}
}

// embeddingError returns err as a tier error of s.
func (s *SemanticCache) embeddingError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var te *Error
	if errors.As(err, &te) {
		return err
	}
	return &Error{Kind: KindOf(err), Tier: s.cfg.Name, Err: err}
}

// Invalidate drops the entries not built on knowledge-base version
// current (see cache.Cache.Invalidate) and returns how many it dropped.
func (s *SemanticCache) Invalidate(current uint64) int {
	if s.cfg.Cache == nil {
		return 0
	}
	return s.cfg.Cache.Invalidate(current)
}

// Remember writes a back to the cache when it qualifies: its source is in
// StoreFrom, it is complete (not Interrupted, not empty), it was not made
// after the question's retrieval failed (its Memo remembers that), and the
// knowledge base has not changed since the question started: since the
// version its Memo holds (the pipeline takes it when the question starts),
// else since the question reached Answer. A question that carries no
// version yet is stored under the current one.
func (s *SemanticCache) Remember(ctx context.Context, q Query, a Answer) {
	if s.cfg.Cache == nil || a.Interrupted || strings.TrimSpace(a.Text) == "" ||
		a.Source == SourceCache || a.Source == SourceStaleCache || !slices.Contains(s.cfg.StoreFrom, a.Source) {
		return
	}
	if q.Memo.retrievalFailed() {
		return // made without the documents it needed: the retrieval failed
	}
	kb := s.cfg.KBVersion()
	if q.Memo.KBVersion(s.cfg.KBVersion) != kb {
		return // built on a knowledge base that has since been reloaded
	}
	vec, err := q.Memo.Embedding(ctx, s.cfg.Embedder, q.Question)
	if err != nil {
		return
	}
	_ = s.cfg.Cache.Put(q.Tenant, q.Question, vec, cache.Entry{
		Text:      a.Text,
		Model:     a.Model,
		Source:    string(a.Source),
		Docs:      docRefs(a.Docs),
		KBVersion: kb,
	})
}

// StaleCacheConfig configures a StaleCache. Zero fields take the defaults
// written beside them.
type StaleCacheConfig struct {
	Name      string         // default "stale_cache"
	Cache     *cache.Cache   // required; usually the semantic cache's
	Embedder  cache.Embedder // as for SemanticCacheConfig
	KBVersion func() uint64  // default: always 0
}

// StaleCache is the stale_cache tier (stale-if-error): placed after the model
// tiers, it is reached only when all of them failed, and serves a cache
// entry that may have expired within the cache's grace period. Its answers
// have Source SourceStaleCache. A StaleCache is safe for concurrent use.
type StaleCache struct {
	cfg StaleCacheConfig
}

// NewStaleCache returns a StaleCache.
func NewStaleCache(cfg StaleCacheConfig) *StaleCache {
	if cfg.Name == "" {
		cfg.Name = "stale_cache"
	}
	if cfg.KBVersion == nil {
		cfg.KBVersion = func() uint64 { return 0 }
	}
	return &StaleCache{cfg: cfg}
}

// Name returns the tier's name.
func (s *StaleCache) Name() string { return s.cfg.Name }

// Source returns SourceStaleCache.
func (s *StaleCache) Source() Source { return SourceStaleCache }

// Len returns the number of entries across tenants, expired ones in grace
// included.
func (s *StaleCache) Len() int {
	if s.cfg.Cache == nil {
		return 0
	}
	return s.cfg.Cache.Size()
}

// Answer returns a fresh or stale cached answer to q, or an *Error of
// KindMiss.
func (s *StaleCache) Answer(ctx context.Context, q Query) (Answer, error) {
	if err := ctx.Err(); err != nil {
		return Answer{}, err
	}
	if s.cfg.Cache == nil {
		return Answer{}, &Error{Kind: KindOther, Tier: s.cfg.Name, Err: errNoCache}
	}
	vec, _ := q.Memo.Embedding(ctx, s.cfg.Embedder, q.Question) // nil: exact matches only
	e, err := s.cfg.Cache.GetStale(q.Tenant, q.Question, vec, s.cfg.KBVersion())
	if err != nil {
		return Answer{}, &Error{Kind: KindMiss, Tier: s.cfg.Name, Err: err}
	}
	return answerFromEntry(e, SourceStaleCache), nil
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
