package config

import (
	"log/slog"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/cache/rediscache"
)

// newCache returns the cache of the cache tiers: with redis.url or
// redis.url_env set, shared through Redis (rediscache) unless the first
// semantic_cache tier says shared: false; else local. The shared
// cache is closed by the pipeline's Close.
func (b *builder) newCache(cc cache.Config) *cache.Cache {
	url := redisURL(b.cfg.Redis, b.env.Getenv)
	tc, ok := b.semanticCache()
	if !ok || tc.Shared != nil && !*tc.Shared {
		return cache.New(cc)
	}
	logger := b.env.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if url == "" {
		if tc.Shared != nil {
			logger.Warn("shared cache: shared: true without redis.url or redis.url_env; the cache stays local")
		}
		return cache.New(cc)
	}
	r := b.cfg.Redis
	sh, c, err := rediscache.New(rediscache.Config{Cache: cc, URL: url, Prefix: r.Prefix, OpTimeout: r.OpTimeout,
		QueueSize: tc.SharedQueue, Logger: b.env.Logger})
	if err != nil {
		// openShared vets the URL unless Env.BreakerStore is given: then a
		// URL that does not parse leaves the cache local, said once.
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
