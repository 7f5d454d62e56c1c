package cache

import (
	"errors"
	"time"
)

// errTenantGone reports a put into a tenant dropped since it was found; Put
// retries on the tenant that replaces it.
var errTenantGone = errors.New("cache: tenant dropped")

// find returns the partition of name, or nil. With use, the call counts as
// the tenant's most recent use.
func (c *Cache) find(name string, use bool) *tenant {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tenants[name]
	if t != nil && use {
		c.byUse.MoveToFront(t.elem)
	}
	return t
}

// create returns the partition of name as its most recent use, made if
// missing; a new one drops the least recently used tenants beyond
// MaxTenants. At most once per sweepEvery it first frees the tenants with
// nothing left to serve.
func (c *Cache) create(name string, now time.Time) *tenant {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !now.Before(c.nextSweep) {
		c.nextSweep = now.Add(c.sweepEvery())
		c.freeIdleLocked(now)
	}
	if t := c.tenants[name]; t != nil {
		c.byUse.MoveToFront(t.elem)
		return t
	}
	t := newTenant(c, name)
	t.elem = c.byUse.PushFront(t)
	c.tenants[name] = t
	for len(c.tenants) > c.cfg.MaxTenants {
		c.dropLocked(c.byUse.Back().Value.(*tenant))
		c.tenantEvictions.Add(1)
	}
	return t
}

// freeIdleLocked drops every tenant that holds no entry or only entries
// past their grace, counting those entries as expirations. It requires c.mu.
func (c *Cache) freeIdleLocked(now time.Time) {
	for _, t := range c.tenants {
		if n, ok := t.retireIfIdle(now); ok {
			c.expirations.Add(uint64(n))
			c.forgetLocked(t)
		}
	}
}

// dropLocked drops t whole. It requires c.mu.
func (c *Cache) dropLocked(t *tenant) {
	t.retire()
	c.forgetLocked(t)
}

// forgetLocked removes the retired t from the tenant set. It requires c.mu.
func (c *Cache) forgetLocked(t *tenant) {
	delete(c.tenants, t.name)
	c.byUse.Remove(t.elem)
}

// sweepEvery is how often entries, and tenants, past their grace are looked
// for: a quarter of the shorter of TTL and grace plus a minute, at least a
// second.
func (c *Cache) sweepEvery() time.Duration {
	return max(time.Second, min(c.cfg.TTL, c.cfg.Grace+time.Minute)/4)
}
