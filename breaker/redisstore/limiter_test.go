package redisstore_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
)

func TestLimiterShared(t *testing.T) {
	ns := cluster(t, 2, breaker.Config{})
	la, lb := ns[0].st.Limiter(), ns[1].st.Limiter()
	ctx := context.Background()
	// One token per 1000s, bursts of 2: the cluster gets two, not four.
	var got []bool
	for _, l := range []interface {
		Allow(context.Context, string, float64, int) (bool, error)
	}{la, lb, la, lb} {
		ok, err := l.Allow(ctx, "tenant:acme", 0.001, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ok)
	}
	if want := []bool{true, true, false, false}; !slices.Equal(got, want) {
		t.Fatalf("allowed %v, want %v", got, want)
	}
	if ok, _ := la.Allow(ctx, "tenant:other", 0.001, 2); !ok {
		t.Fatal("another key shares the limit")
	}
	if ok, err := la.Allow(ctx, "tenant:acme", 0, 0); !ok || err != nil {
		t.Fatalf("no limit: %v %v", ok, err)
	}
	rdb := redistest.Client(t)
	key := ns[0].st.Prefix() + ":rate:tenant:acme"
	if rdb.Exists(ctx, key).Val() != 1 {
		t.Fatalf("no key %q", key)
	}
}

func TestLimiterRefills(t *testing.T) {
	ns := cluster(t, 1, breaker.Config{})
	l := ns[0].st.Limiter()
	ctx := context.Background()
	// 1e6 per second: a refused token is back within microseconds.
	allowed := 0
	for range 100 {
		if ok, err := l.Allow(ctx, "fast", 1e6, 1); err != nil {
			t.Fatalf("%v; logs:\n%s", err, ns[0].log.All())
		} else if ok {
			allowed++
		}
	}
	if allowed < 90 {
		t.Fatalf("%d of 100 allowed at 1e6/s", allowed)
	}
}

func TestLimiterCallerCancelKeepsHealthy(t *testing.T) {
	// A caller that gives up (a cancelled or expired request context) says
	// nothing about Redis: the store must not declare an outage.
	ns := cluster(t, 1, breaker.Config{})
	l := ns[0].st.Limiter()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Allow(ctx, "k", 1, 1); err == nil {
		t.Fatal("no error for a cancelled context")
	}
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	if _, err := l.Allow(expired, "k", 1, 1); err == nil {
		t.Fatal("no error for an expired context")
	}
	if !ns[0].st.Healthy() || ns[0].log.Level(slog.LevelWarn) != 0 {
		t.Fatalf("a caller's cancellation marked Redis unreachable; logs:\n%s", ns[0].log.All())
	}
}

// TestLimiterTinyRate guards rates so low that one token takes longer than
// a time.Duration can hold (below about 1.08e-10 per second): the period
// must not overflow to a negative value that lets calls through, so a
// burst of 1 grants exactly one call.
func TestLimiterTinyRate(t *testing.T) {
	ns := cluster(t, 1, breaker.Config{})
	l := ns[0].st.Limiter()
	allowed := 0
	for range 10 {
		ok, err := l.Allow(context.Background(), "tiny", 1e-11, 1)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			allowed++
		}
	}
	if allowed != 1 {
		t.Errorf("burst 1 at 1e-11/s: %d of 10 allowed, want 1", allowed)
	}
}
