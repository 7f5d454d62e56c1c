package config

import (
	"github.com/ragfuse/ragfuse/breaker/redisstore"
	"github.com/ragfuse/ragfuse/pipeline"
)

var _ pipeline.Limiter = (*redisstore.Limiter)(nil)

// openShared opens the redisstore.Store (breaker state) and its Limiter
// (rate limits) of a configuration with redis.url and no
// Env.BreakerStore, under redis.prefix, for the pipeline to close. An
// unreachable Redis does not fail it: the store starts unhealthy and the
// pipeline runs on local state until Redis answers.
func (b *builder) openShared() error {
	r := b.cfg.Redis
	st, err := redisstore.New(redisstore.Config{URL: r.URL, Prefix: r.Prefix, OpTimeout: r.OpTimeout,
		Clock: b.env.Clock, Logger: b.env.Logger})
	if err != nil {
		return &FieldError{Path: "redis.url", Msg: "is not a valid redis:// URL"}
	}
	b.env.BreakerStore = st
	if b.env.StoreKind == "" {
		b.env.StoreKind = "redis"
	}
	b.limiter = st.Limiter()
	b.closers = append(b.closers, st)
	return nil
}
