package redisstore_test

import (
	"log/slog"
	"testing"

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
