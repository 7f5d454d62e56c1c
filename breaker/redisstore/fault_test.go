package redisstore_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/breaker/redisstore"
	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
)

// eventuallyWithin is eventually with its own deadline, for reconnections.
func eventuallyWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// callsFor makes n successful calls on b and returns how long they took.
func callsFor(t *testing.T, b *breaker.Breaker, n int) time.Duration {
	t.Helper()
	start := time.Now()
	for range n {
		call(t, b, breaker.Success)
	}
	return time.Since(start)
}

func TestRedisKilledAndRestarted(t *testing.T) {
	srv := redistest.StartServer(t)
	bc := breaker.Config{FailureThreshold: 2, OpenDuration: 10 * time.Second}
	a := newNode(t, srv.URL(), "fault", bc)
	b := newNode(t, srv.URL(), "fault", bc)
	ba, bb := a.reg.Get("m"), b.reg.Get("m")
	if !a.st.Healthy() || !b.st.Healthy() {
		t.Fatal("unhealthy before the outage")
	}

	srv.Kill()
	eventually(t, "both stores to notice the outage", func() bool { return !a.st.Healthy() && !b.st.Healthy() })

	// Calls go on at local speed: 1000 calls that each waited for Redis
	// would take at least 1000*OpTimeout.
	if d := callsFor(t, ba, 1000); d > 2*time.Second {
		t.Fatalf("1000 calls took %v during the outage", d)
	}
	if !b.st.AcquireProbe("m", time.Second) {
		t.Fatal("AcquireProbe refused while Redis is down")
	}
	if _, err := a.st.Limiter().Allow(context.Background(), "k", 1, 1); !errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("Limiter.Allow during the outage: %v", err)
	}
	// A trip during the outage stays local...
	call(t, ba, breaker.Failure)
	call(t, ba, breaker.Failure)
	if ba.State() != open || bb.State() != closed {
		t.Fatalf("states during the outage: %v %v", ba.State(), bb.State())
	}

	// ...and reaches the other instance once Redis is back.
	srv.Start()
	eventuallyWithin(t, 10*time.Second, "both stores to reconnect", func() bool { return a.st.Healthy() && b.st.Healthy() })
	eventually(t, "the outage's trip to reach the other instance", func() bool { return bb.State() == open })
	if got, want := bb.Snapshot().OpenUntil, ba.Snapshot().OpenUntil; !got.Equal(want) {
		t.Fatalf("open until %v, want %v", got, want)
	}
	for _, n := range []*node{a, b} {
		if w, i := n.log.Level(slog.LevelWarn), n.log.Level(slog.LevelInfo); w != 1 || i != 1 {
			t.Fatalf("logs: %d warnings, %d infos, want 1 each:\n%s", w, i, n.log.All())
		}
	}

	// Shared state works again: a new trip spreads.
	bb2, ba2 := b.reg.Get("m2"), a.reg.Get("m2")
	bb2.Trip()
	eventually(t, "a trip after the restart to spread", func() bool { return ba2.State() == open })
}

func TestRedisHung(t *testing.T) {
	srv := redistest.StartServer(t)
	a := newNode(t, srv.URL(), "hung", breaker.Config{OpenDuration: 10 * time.Second})
	ba := a.reg.Get("m")
	srv.Pause()
	defer srv.Resume()

	start := time.Now()
	ok := a.st.AcquireProbe("m", time.Second) // bounded by OpTimeout, then local
	if d := time.Since(start); !ok || d > testOpTimeout+time.Second {
		t.Fatalf("AcquireProbe on a hung Redis: %v after %v", ok, d)
	}
	if a.st.Healthy() {
		t.Fatal("a timed-out call left the store healthy")
	}
	start = time.Now()
	if _, err := a.st.Limiter().Allow(context.Background(), "k", 1, 1); err == nil || time.Since(start) > testOpTimeout+time.Second {
		t.Fatalf("Limiter.Allow on a hung Redis: %v after %v", err, time.Since(start))
	}
	if d := callsFor(t, ba, 1000); d > 2*time.Second {
		t.Fatalf("1000 calls took %v while Redis hangs", d)
	}
	ba.Trip()
	a.clk.Advance(10 * time.Second)
	if _, err := ba.Allow(); err != nil { // the probe answers from local state
		t.Fatalf("probe while Redis hangs: %v", err)
	}
	srv.Resume()
	eventuallyWithin(t, 10*time.Second, "the store to recover", a.st.Healthy)
}
