package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

func limitedPipeline(t *testing.T, rl RateLimitConfig, rec *recorder) (*Pipeline, *fakeTier, *fakeTier) {
	t.Helper()
	primary := tier("primary", tiers.SourcePrimary, answers("model"))
	ret := tier("retrieval", tiers.SourceRetrieval, answers("docs"))
	p, _ := newTestPipeline(t, Options{RateLimit: rl, Observer: rec, Tiers: []Stage{{Tier: primary, Model: true}, {Tier: ret}}})
	return p, primary, ret
}

func TestTenantRateLimitDegrades(t *testing.T) {
	rec := &recorder{}
	p, primary, _ := limitedPipeline(t, RateLimitConfig{TenantRPS: 1, TenantBurst: 2}, rec)
	var sources []tiers.Source
	for range 4 {
		sources = append(sources, ask(t, p, "q").Source)
	}
	want := []tiers.Source{"primary", "primary", "retrieval", "retrieval"}
	if !slices.Equal(sources, want) {
		t.Fatalf("sources = %v, want %v", sources, want)
	}
	if primary.calls.Load() != 2 {
		t.Fatalf("primary called %d times", primary.calls.Load())
	}
	res := ask(t, p, "q")
	if got := outcomes(res); !slices.Equal(got, []string{"primary:over_quota", "retrieval:success"}) {
		t.Fatalf("attempts = %v", got)
	}
	// Other tenants have their own quota.
	res, _ = p.Ask(context.Background(), tiers.Query{Tenant: "other", Question: "q"})
	if res.Source != tiers.SourcePrimary {
		t.Fatalf("other tenant: %s", res.Source)
	}
	ev := rec.kinds(EventRateLimited)
	if len(ev) != 3 || ev[0].Reason != "tenant" || ev[0].Tenant != "acme" {
		t.Fatalf("rate-limit events = %+v", ev)
	}
}

func TestRateLimitRefillsWithClock(t *testing.T) {
	primary := tier("primary", tiers.SourcePrimary, answers("model"))
	p, clk := newTestPipeline(t, Options{RateLimit: RateLimitConfig{TenantRPS: 1}, Tiers: []Stage{{Tier: primary, Model: true},
		{Tier: tier("s", tiers.SourceStatic, answers("x"))}}})
	if ask(t, p, "q").Source != "primary" || ask(t, p, "q").Source != "static" {
		t.Fatal("burst of 1 not enforced")
	}
	clk.Advance(time.Second)
	if ask(t, p, "q").Source != "primary" {
		t.Fatal("quota not refilled after a second")
	}
}

func TestGlobalRateLimitRejects(t *testing.T) {
	rec := &recorder{}
	p, primary, ret := limitedPipeline(t, RateLimitConfig{GlobalRPS: 1, GlobalBurst: 1, Reject: true}, rec)
	ask(t, p, "q")
	res, err := p.Ask(context.Background(), tiers.Query{Tenant: "b", Question: "q"})
	if !errors.Is(err, ErrRejected) || res != nil {
		t.Fatalf("res=%v err=%v", res, err)
	}
	if primary.calls.Load() != 1 || ret.calls.Load() != 0 {
		t.Fatal("a rejected question reached a tier")
	}
	if ev := rec.kinds(EventRateLimited); len(ev) != 1 || ev[0].Reason != "global" {
		t.Fatalf("events = %+v", ev)
	}
	if st := p.Status().RateLimit; !st.Reject || st.GlobalRPS != 1 {
		t.Fatalf("status rate limit = %+v", st)
	}
}

func TestTenantLimitersBounded(t *testing.T) {
	a := newAdmission(RateLimitConfig{TenantRPS: 1}, 3)
	now := epoch
	for _, tn := range []string{"a", "b", "c", "d", "e"} {
		if a.admit(tn, now) != "" {
			t.Fatalf("tenant %s refused", tn)
		}
	}
	if n := a.lru.Len(); n != 3 || len(a.tenants) != 3 {
		t.Fatalf("%d limiters kept, want 3", n)
	}
	if a.admit("e", now) != limitTenant {
		t.Fatal("a recent tenant lost its limiter")
	}
}

// slowLimiter admits everything after a delay, as a shared limiter on a
// slow Redis does (up to its op timeout per call).
type slowLimiter struct{ delay time.Duration }

func (s slowLimiter) Allow(ctx context.Context, _ string, _ float64, _ int) (bool, error) {
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// TestAdmissionCountsInTheBudget: the request's budget counts from the
// call, the time admission took included, for Stream as for Ask: a slow
// shared limiter does not stretch a question past its request timeout.
func TestAdmissionCountsInTheBudget(t *testing.T) {
	for _, mode := range []string{"ask", "stream"} {
		t.Run(mode, func(t *testing.T) {
			primary := tier("primary", tiers.SourcePrimary, answers("ok"))
			p, _ := newTestPipeline(t, Options{
				RequestTimeout: 400 * time.Millisecond,
				RateLimit:      RateLimitConfig{TenantRPS: 1000},
				Limiter:        slowLimiter{delay: 200 * time.Millisecond},
				Tiers:          []Stage{{Tier: primary}, {Tier: tiers.NewStatic("static", "sorry")}},
			})
			q := tiers.Query{Tenant: "acme", Question: "q"}
			var err error
			if mode == "ask" {
				_, err = p.Ask(context.Background(), q)
			} else {
				_, err = p.Stream(context.Background(), q, func(StreamEvent) error { return nil })
			}
			if err != nil {
				t.Fatal(err)
			}
			given := primary.given()
			if len(given) != 1 {
				t.Fatalf("primary called %d times", len(given))
			}
			// 200ms of the 400ms went to admission: at most 200ms are left.
			if given[0] > 300*time.Millisecond {
				t.Fatalf("primary was given %v after 200ms of admission, out of a 400ms budget", given[0])
			}
		})
	}
}

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
		RateLimit: RateLimitConfig{TenantRPS: 1, TenantBurst: 1, GlobalRPS: 100, Reject: true},
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
