package pipeline

import (
	"context"

	"github.com/ragfuse/ragfuse/breaker/redisstore"
)

// Limiter is a rate limiter shared by several instances, such as
// redisstore.Limiter. Allow takes one token for key from a limit of rps per
// second with bursts of burst. An error means it could not answer (Redis
// unreachable or too slow); admission then uses the local limiters. Allow
// must return within a short bound of its own. Implementations must be
// safe for concurrent use.
type Limiter interface {
	Allow(ctx context.Context, key string, rps float64, burst int) (bool, error)
}

var _ Limiter = (*redisstore.Limiter)(nil)

// Keys of the shared rate limits.
const (
	sharedGlobalKey    = "global"
	sharedTenantPrefix = "tenant:"
)

// buildShared is Build for a configuration with redis.url and no
// BuildEnv.BreakerStore: it opens a redisstore.Store (breaker state) and
// its Limiter (rate limits) under redis.prefix, builds the pipeline on
// them, and leaves the store to be closed by Pipeline.Close. An
// unreachable Redis does not fail it: the store starts unhealthy and
// the pipeline runs on local state until Redis answers.
// cfg has been checked by Build.
func buildShared(cfg Config, env BuildEnv) (*Pipeline, error) {
	st, err := redisstore.New(redisstore.Config{URL: cfg.Redis.URL, Prefix: cfg.Redis.Prefix,
		OpTimeout: cfg.Redis.OpTimeout, Clock: env.Clock, Logger: env.Logger})
	if err != nil {
		return nil, &FieldError{Path: "redis.url", Msg: "is not a valid redis:// URL"}
	}
	env.BreakerStore = st
	if env.StoreKind == "" {
		env.StoreKind = "redis"
	}
	p, err := Build(cfg, env)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	p.limits.shared = st.Limiter()
	p.closers = append(p.closers, st)
	return p, nil
}

// admitShared applies the limits through the shared limiter. ok is false
// when it could not answer; the caller then uses the local limiters.
func (a *admission) admitShared(ctx context.Context, tenant string) (reason string, ok bool) {
	if a.tenantRPS > 0 {
		allowed, err := a.shared.Allow(ctx, sharedTenantPrefix+tenant, float64(a.tenantRPS), a.tenantBurst)
		if err != nil {
			return "", false
		}
		if !allowed {
			return limitTenant, true
		}
	}
	if a.global != nil {
		allowed, err := a.shared.Allow(ctx, sharedGlobalKey, float64(a.global.Limit()), a.global.Burst())
		if err != nil {
			return "", false
		}
		if !allowed {
			return limitGlobal, true
		}
	}
	return "", true
}
