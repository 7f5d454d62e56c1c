package pipeline

import "context"

// Limiter is a rate limiter shared by several instances, such as
// redisstore.Limiter. Allow takes one token for key from a limit of rps per
// second with bursts of burst. An error means it could not answer (Redis
// unreachable or too slow); admission then uses the local limiters. Allow
// must return within a short bound of its own. Implementations must be
// safe for concurrent use.
type Limiter interface {
	Allow(ctx context.Context, key string, rps float64, burst int) (bool, error)
}

// Keys of the shared rate limits.
const (
	sharedGlobalKey    = "global"
	sharedTenantPrefix = "tenant:"
)

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
