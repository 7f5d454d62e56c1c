package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/sony/gobreaker/v2"

	"github.com/ragfuse/ragfuse/breaker"
)

// The benchmarks measure one Allow plus one successful report on a CLOSED
// breaker, for this package and two peers, in three settings: one goroutine
// (Serial), b.RunParallel (Parallel), and a 10s time-based window (TimeWindow,
// parallel).

func BenchmarkSerial(b *testing.B) {
	b.Run("ragfuse", func(b *testing.B) { benchOurs(b, breaker.Config{}, false) })
	b.Run("gobreaker", func(b *testing.B) { benchGobreaker(b, gobreaker.Settings{}, false) })
	b.Run("failsafe", func(b *testing.B) { benchFailsafe(b, circuitbreaker.NewWithDefaults[any](), false) })
}

func BenchmarkParallel(b *testing.B) {
	b.Run("ragfuse", func(b *testing.B) { benchOurs(b, breaker.Config{}, true) })
	b.Run("gobreaker", func(b *testing.B) { benchGobreaker(b, gobreaker.Settings{}, true) })
	b.Run("failsafe", func(b *testing.B) { benchFailsafe(b, circuitbreaker.NewWithDefaults[any](), true) })
}

func BenchmarkTimeWindow(b *testing.B) {
	b.Run("ragfuse", func(b *testing.B) {
		benchOurs(b, breaker.Config{WindowDuration: 10 * time.Second, WindowBuckets: 10}, true)
	})
	b.Run("gobreaker", func(b *testing.B) {
		benchGobreaker(b, gobreaker.Settings{Interval: 10 * time.Second, BucketPeriod: time.Second}, true)
	})
	b.Run("failsafe", func(b *testing.B) {
		cb := circuitbreaker.NewBuilder[any]().WithFailureRateThreshold(0.5, 10, 10*time.Second).Build()
		benchFailsafe(b, cb, true)
	})
}

// BenchmarkSlowCalls is Allow plus a report with slow calls tracked (a 1s
// SlowCallDuration), which counts every call in flight until it reports.
func BenchmarkSlowCalls(b *testing.B) {
	cfg := breaker.Config{SlowCallDuration: time.Second}
	b.Run("serial", func(b *testing.B) { benchOurs(b, cfg, false) })
	b.Run("parallel", func(b *testing.B) { benchOurs(b, cfg, true) })
	cfg.WindowDuration = 10 * time.Second
	b.Run("time-window", func(b *testing.B) { benchOurs(b, cfg, true) })
}

func benchOurs(b *testing.B, cfg breaker.Config, parallel bool) {
	br := breaker.New("bench", cfg)
	once := func() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Done(breaker.Success)
	}
	run(b, parallel, once)
	if s := br.State(); s != breaker.StateClosed {
		b.Fatalf("state %v, want closed", s)
	}
}

func benchGobreaker(b *testing.B, st gobreaker.Settings, parallel bool) {
	st.Name = "bench"
	cb := gobreaker.NewTwoStepCircuitBreaker[any](st)
	run(b, parallel, func() {
		done, err := cb.Allow()
		if err != nil {
			b.Fatal(err)
		}
		done(nil)
	})
}

func benchFailsafe(b *testing.B, cb circuitbreaker.CircuitBreaker[any], parallel bool) {
	run(b, parallel, func() {
		if !cb.TryAcquirePermit() {
			b.Fatal(errors.New("failsafe: permit refused"))
		}
		cb.RecordSuccess()
	})
}

func run(b *testing.B, parallel bool, once func()) {
	b.ReportAllocs()
	if !parallel {
		for b.Loop() {
			once()
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			once()
		}
	})
}

// BenchmarkDo measures the one-step form, with a call that succeeds.
func BenchmarkDo(b *testing.B) {
	b.Run("ragfuse", func(b *testing.B) {
		br := breaker.New("bench", breaker.Config{})
		ctx := context.Background()
		fn := func(context.Context) error { return nil }
		run(b, true, func() {
			if err := br.Do(ctx, fn); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("gobreaker", func(b *testing.B) {
		cb := gobreaker.NewCircuitBreaker[any](gobreaker.Settings{Name: "bench"})
		fn := func() (any, error) { return nil, nil }
		run(b, true, func() {
			if _, err := cb.Execute(fn); err != nil {
				b.Fatal(err)
			}
		})
	})
}
