package config

import (
	"log/slog"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/cache/rediscache"
)

// newCache returns the cache of the cache tiers: shared through Redis
// (rediscache) when the first semantic_cache tier's shared: is true or,
// with redis.url or redis.url_env set, left unset; else local. The shared
// cache is closed by the pipeline's Close.
func (b *builder) newCache(cc cache.Config) *cache.Cache {
	url := redisURL(b.cfg.Redis, b.env.Getenv)
	tc, ok := b.semanticCache()
	if !ok || url == "" || tc.Shared != nil && !*tc.Shared {
		return cache.New(cc)
	}
	r := b.cfg.Redis
	sh, c, err := rediscache.New(rediscache.Config{Cache: cc, URL: url, Prefix: r.Prefix, OpTimeout: r.OpTimeout,
		QueueSize: tc.SharedQueue, Logger: b.env.Logger})
	if err != nil {
		// openShared vets the URL unless Env.BreakerStore is given: then a
		// URL that does not parse leaves the cache local, said once.
		logger := b.env.Logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.Warn("shared cache: not shared", "err", err)
		return cache.New(cc)
	}
	b.closers = append(b.closers, sh)
	return c
}

// semanticCache returns the settings of the first semantic_cache tier.
func (b *builder) semanticCache() (CacheTier, bool) {
	for _, t := range b.cfg.Tiers {
		if t.Kind == KindSemanticCache {
			return t.Cache, true
		}
	}
	return CacheTier{}, false
}
