package pipeline

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ragfuse/ragfuse/tiers"
)

// fakeLimiter answers like a shared limiter, or fails like one whose Redis
// is down.
type fakeLimiter struct {
	mu    sync.Mutex
	err   error
	allow bool
	keys  []string
}

func (f *fakeLimiter) Allow(_ context.Context, key string, _ float64, _ int) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, key)
	return f.allow, f.err
}

func TestSharedLimiterFallsBackToLocal(t *testing.T) {
	lim := &fakeLimiter{err: errors.New("redis down")}
	p, _ := newTestPipeline(t, Options{
		Tiers:     []Stage{{Tier: tiers.NewStatic("static", "")}},
		RateLimit: RateLimitConfig{TenantRPS: 1, TenantBurst: 1, GlobalRPS: 100, OnLimit: OnLimitReject},
		Limiter:   lim,
	})
	q := tiers.Query{Tenant: "acme", Question: "q"}
	if _, err := p.Ask(context.Background(), q); err != nil {
		t.Fatalf("first: %v", err)
	}
	if _, err := p.Ask(context.Background(), q); !errors.Is(err, ErrRejected) {
		t.Fatalf("the local limiter did not stand in: %v", err)
	}
	lim.mu.Lock()
	lim.err, lim.allow, lim.keys = nil, true, nil
	lim.mu.Unlock()
	if _, err := p.Ask(context.Background(), q); err != nil {
		t.Fatalf("the shared limiter's answer was not used: %v", err)
	}
	lim.mu.Lock()
	lim.allow = false
	lim.mu.Unlock()
	if _, err := p.Ask(context.Background(), q); !errors.Is(err, ErrRejected) {
		t.Fatalf("the shared limiter's refusal was not used: %v", err)
	}
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if want := []string{"tenant:acme", "global", "tenant:acme"}; strings.Join(lim.keys, ",") != strings.Join(want, ",") {
		t.Fatalf("keys %v, want %v", lim.keys, want)
	}
}
