package drill

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// asker asks question i and returns the source of the answer, "" for
// none.
type asker func(ctx context.Context, i int) string

// result is one question as the driver timed it.
type result struct {
	sent    time.Time
	latency time.Duration
	source  string
}

// drive sends questions through ask following load (already scaled to
// real time) from start for warmup+duration, and returns when every
// question sent has ended. Each question is bounded by limit.
func drive(ctx context.Context, load Load, start time.Time, limit time.Duration, ask asker) []result {
	var (
		mu  sync.Mutex
		out []result
		wg  sync.WaitGroup
	)
	end := start.Add(load.Warmup + load.Duration)
	one := func(i int) {
		qctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		t0 := time.Now()
		src := ask(qctx, i)
		r := result{sent: t0, latency: time.Since(t0), source: src}
		mu.Lock()
		out = append(out, r)
		mu.Unlock()
	}
	if load.Concurrency > 0 {
		var next int
		var nmu sync.Mutex
		for range load.Concurrency {
			wg.Go(func() {
				for ctx.Err() == nil && time.Now().Before(end) {
					nmu.Lock()
					i := next
					next++
					nmu.Unlock()
					one(i)
				}
			})
		}
		wg.Wait()
		return out
	}
	total := float64(load.Warmup + load.Duration)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := 0; ; i++ {
		// In float, so that a very low rate cannot overflow a Duration.
		offset := float64(i) * float64(time.Second) / load.Rate
		if offset >= total {
			break
		}
		at := start.Add(time.Duration(offset))
		timer.Reset(time.Until(at))
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() { one(i) })
	}
	wg.Wait()
	return out
}

// sampler records the peak number of goroutines and the peak live heap
// until stopped. It is safe for concurrent use.
type sampler struct {
	stop     chan struct{}
	done     chan struct{}
	peakG    int
	peakHeap uint64
}

// startSampler starts a sampler reading every period.
func startSampler(period time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(period)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			s.peakG = max(s.peakG, runtime.NumGoroutine())
			runtime.ReadMemStats(&ms)
			s.peakHeap = max(s.peakHeap, ms.HeapAlloc)
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// finish stops s and returns the peaks.
func (s *sampler) finish() (goroutines int, heap uint64) {
	close(s.stop)
	<-s.done
	return s.peakG, s.peakHeap
}
