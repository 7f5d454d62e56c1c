package config

import (
	"cmp"
	"log/slog"

	"github.com/ragfuse/ragfuse/breaker/redisstore"
	"github.com/ragfuse/ragfuse/pipeline"
)

var _ pipeline.Limiter = (*redisstore.Limiter)(nil)

// openShared opens the redisstore.Store (breaker state, cooldowns and
// reloads) and its Limiter (rate limits) at url (redis.url or the value
// of redis.url_env) for a configuration without Env.BreakerStore, under
// redis.prefix, for the pipeline to close. An unreachable Redis does not fail it: the store
// starts unhealthy and the pipeline runs on local state until Redis
// answers.
func (b *builder) openShared(url string) error {
	r := b.cfg.Redis
	st, err := redisstore.New(redisstore.Config{URL: url, Prefix: r.Prefix, Instance: r.Instance, OpTimeout: r.OpTimeout,
		Clock: b.env.Clock, Logger: b.env.Logger})
	if err != nil {
		path, msg := "redis.url", "is not a valid redis:// URL"
		if r.URLEnv != "" {
			path, msg = "redis.url_env", "environment variable "+r.URLEnv+" does not hold a valid redis:// URL"
		}
		return &FieldError{Path: path, Msg: msg}
	}
	b.env.BreakerStore = st
	if b.env.StoreKind == "" {
		b.env.StoreKind = "redis"
	}
	b.limiter = st.Limiter()
	b.cluster = &clusterLink{st: st, log: cmp.Or(b.env.Logger, slog.Default())}
	b.closers = append(b.closers, st)
	return nil
}
