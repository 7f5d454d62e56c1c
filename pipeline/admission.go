package pipeline

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/tiers"
	"golang.org/x/time/rate"
)

// RateLimitConfig configures admission. The zero value admits everything.
type RateLimitConfig struct {
	GlobalRPS   float64 // 0: unlimited
	GlobalBurst int     // default max(1, int(GlobalRPS))
	TenantRPS   float64 // 0: unlimited
	TenantBurst int     // default max(1, int(TenantRPS))
	// Reject refuses a question over a limit with ErrRejected; false
	// degrades it instead: its model stages are skipped (over_quota).
	Reject bool
}

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

// Admission reasons, as in EventRateLimited's Reason.
const (
	limitGlobal = "global"
	limitTenant = "tenant"
)

// defaultMaxTenants bounds the per-tenant limiters kept in memory.
const defaultMaxTenants = 10000

// admission applies the global and per-tenant rate limits. Tenant limiters
// are kept in a bounded LRU; a tenant evicted and seen again starts with a
// full burst. It is safe for concurrent use.
type admission struct {
	shared      Limiter       // nil: local limiters only
	global      *rate.Limiter // nil: unlimited
	tenantRPS   rate.Limit    // 0: unlimited
	tenantBurst int
	maxTenants  int

	mu      sync.Mutex // guards tenants and lru
	tenants map[string]*list.Element
	lru     *list.List // of *tenantLimiter, most recent first
}

type tenantLimiter struct {
	tenant string
	lim    *rate.Limiter
}

func newAdmission(c RateLimitConfig, maxTenants int) *admission {
	a := &admission{maxTenants: maxTenants, tenants: map[string]*list.Element{}, lru: list.New()}
	if a.maxTenants <= 0 {
		a.maxTenants = defaultMaxTenants
	}
	if c.GlobalRPS > 0 {
		a.global = rate.NewLimiter(rate.Limit(c.GlobalRPS), burst(c.GlobalBurst, c.GlobalRPS))
	}
	if c.TenantRPS > 0 {
		a.tenantRPS = rate.Limit(c.TenantRPS)
		a.tenantBurst = burst(c.TenantBurst, c.TenantRPS)
	}
	return a
}

func burst(b int, rps float64) int {
	if b > 0 {
		return b
	}
	return max(1, int(rps))
}

// admit takes a token for tenant at now. It returns "" when admitted, or
// the limit that refused: limitTenant or limitGlobal.
func (a *admission) admit(tenant string, now time.Time) string {
	if a.tenantRPS > 0 && !a.tenant(tenant).AllowN(now, 1) {
		return limitTenant
	}
	if a.global != nil && !a.global.AllowN(now, 1) {
		return limitGlobal
	}
	return ""
}

// admitNow is admit at the clock's time, read only when a limit is set.
// With a shared limiter the limits are taken from it, and from the local
// limiters only when it cannot answer.
func (a *admission) admitNow(ctx context.Context, tenant string, clk clock.Clock) string {
	if a.global == nil && a.tenantRPS == 0 {
		return ""
	}
	if a.shared != nil {
		if reason, ok := a.admitShared(ctx, tenant); ok {
			return reason
		}
	}
	return a.admit(tenant, clk.Now())
}

// tenant returns tenant's limiter, creating it and evicting the least
// recently used one when full.
func (a *admission) tenant(tenant string) *rate.Limiter {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.tenants[tenant]; ok {
		a.lru.MoveToFront(e)
		return e.Value.(*tenantLimiter).lim
	}
	if a.lru.Len() >= a.maxTenants {
		old := a.lru.Back()
		a.lru.Remove(old)
		delete(a.tenants, old.Value.(*tenantLimiter).tenant)
	}
	tl := &tenantLimiter{tenant: tenant, lim: rate.NewLimiter(a.tenantRPS, a.tenantBurst)}
	a.tenants[tenant] = a.lru.PushFront(tl)
	return tl.lim
}

// admit lets q in, or refuses it: when ctx is done (ctx.Err()), after
// Close (ErrClosed), or over a rate limit with on_limit: reject
// (ErrRejected). degraded is true when q is over a rate limit and must
// skip the model tiers.
func (p *Pipeline) admit(ctx context.Context, q tiers.Query) (degraded bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if p.inflight.closed() {
		return false, ErrClosed
	}
	if reason := p.limits.admitNow(ctx, q.Tenant, p.clock); reason != "" {
		p.emit(Event{Kind: EventRateLimited, Tenant: q.Tenant, Reason: reason})
		if p.rlConfig.Reject {
			return false, ErrRejected
		}
		return true, nil
	}
	return false, nil
}

// quotaGuard is admission's guard of a model stage (on): a question over
// a rate limit with on_limit: degrade skips it (over_quota).
type quotaGuard struct {
	on   bool
	next budgetGuard
}

func (g *quotaGuard) call(ctx context.Context, c *call) (tiers.Answer, error) {
	if g.on && c.degraded {
		return c.skip(outcomeQuota)
	}
	return g.next.call(ctx, c)
}
