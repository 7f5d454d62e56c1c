package redisstore_test

import (
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/breaker/redisstore"
	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
)

// BenchmarkAllowReport measures one Allow plus one successful report on a
// CLOSED breaker with no store, with a MemoryStore and with a Redis Store,
// on one goroutine (Serial) and with b.RunParallel (Parallel).
func BenchmarkAllowReport(b *testing.B) {
	for _, mode := range []struct {
		name     string
		parallel bool
	}{{"Serial", false}, {"Parallel", true}} {
		b.Run(mode.name, func(b *testing.B) {
			b.Run("none", func(b *testing.B) { benchStore(b, nil, mode.parallel) })
			b.Run("memory", func(b *testing.B) { benchStore(b, breaker.NewMemoryStore(nil), mode.parallel) })
			b.Run("redis", func(b *testing.B) {
				redistest.Client(b)
				st, err := redisstore.New(redisstore.Config{URL: redistest.URL(), Prefix: redistest.Prefix(b), Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				if !st.Healthy() {
					b.Fatal("redis store unhealthy")
				}
				benchStore(b, st, mode.parallel)
			})
		})
	}
}

func benchStore(b *testing.B, st breaker.Store, parallel bool) {
	br := breaker.New("bench", breaker.Config{Store: st})
	once := func() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Done(breaker.Success)
	}
	b.ReportAllocs()
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				once()
			}
		})
	} else {
		for b.Loop() {
			once()
		}
	}
	if s := br.State(); s != breaker.StateClosed {
		b.Fatalf("state %v, want closed", s)
	}
}

// BenchmarkPropagation measures how long a transition on one instance
// takes to reach a breaker on another instance through Redis pub/sub: one
// op is a trip and a reset, each waited for on the other side.
func BenchmarkPropagation(b *testing.B) {
	stores := benchStores(b, 2)
	from := breaker.New("m", breaker.Config{Store: stores[0]})
	to := breaker.New("m", breaker.Config{Store: stores[1]})
	wait := func(s breaker.State) {
		deadline := time.Now().Add(5 * time.Second)
		for to.State() != s {
			if time.Now().After(deadline) {
				b.Fatalf("state %v never arrived", s)
			}
			runtime.Gosched()
		}
	}
	for b.Loop() {
		from.Trip()
		wait(breaker.StateOpen)
		from.Reset()
		wait(breaker.StateClosed)
	}
}

// BenchmarkCooldownPropagation measures how long a cooldown shared by one
// instance takes to reach another through Redis pub/sub: one op is a
// cooldown and its end, each waited for on the other side.
func BenchmarkCooldownPropagation(b *testing.B) {
	stores := benchStores(b, 2)
	var seen atomic.Int64 // the until (unix ns) last heard, 0: ended
	stores[1].OnCooldown(func(_ string, until time.Time) {
		if until.IsZero() {
			seen.Store(0)
		} else {
			seen.Store(until.UnixNano())
		}
	})
	wait := func(want int64) {
		deadline := time.Now().Add(5 * time.Second)
		for seen.Load() != want {
			if time.Now().After(deadline) {
				b.Fatalf("cooldown %d never arrived", want)
			}
			runtime.Gosched()
		}
	}
	until := time.Now().Add(time.Hour)
	for b.Loop() {
		until = until.Add(time.Millisecond)
		stores[0].ShareCooldown("m", until)
		wait(until.UnixNano())
		stores[0].ShareCooldown("m", time.Time{})
		wait(0)
	}
}

// benchStores returns n stores of one cluster on the test Redis, under the
// benchmark's prefix, closed when it ends.
func benchStores(b *testing.B, n int) []*redisstore.Store {
	b.Helper()
	redistest.Client(b)
	prefix := redistest.Prefix(b)
	stores := make([]*redisstore.Store, n)
	for i := range stores {
		st, err := redisstore.New(redisstore.Config{URL: redistest.URL(), Prefix: prefix, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		stores[i] = st
	}
	return stores
}
