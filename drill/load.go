package drill

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// outcome is how one question ended: the source of its answer, or
// sourceError and, when known, the cause.
type outcome struct {
	source string
	cause  string // e.g. "HTTP 401"; "" when answered
}

// asker asks question i and returns how it ended.
type asker func(ctx context.Context, i int) outcome

// result is one question as the driver timed it.
type result struct {
	// due is when the load says the question is asked: its scheduled time
	// in an open loop, the moment a client turns to it in a closed loop.
	due     time.Time
	lag     time.Duration // how much later the driver actually asked it
	latency time.Duration // from due until it ended, the lag included
	outcome
}

// drive sends questions through ask following load (already scaled to
// real time) from start for warmup+duration, and returns when every
// question sent has ended. Each question is bounded by limit. Questions
// are timed from when they were due, so a driver that falls behind neither
// moves warm-up questions into the measured window nor hides its lag from
// the latencies; each result says how late it was asked.
func drive(ctx context.Context, load Load, start time.Time, limit time.Duration, ask asker) []result {
	var (
		mu  sync.Mutex
		out []result
		wg  sync.WaitGroup
	)
	end := start.Add(load.Warmup + load.Duration)
	one := func(i int, due time.Time) {
		qctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		lag := max(time.Since(due), 0)
		o := ask(qctx, i)
		r := result{due: due, lag: lag, latency: time.Since(due), outcome: o}
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
					one(i, time.Now())
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
		wg.Go(func() { one(i, at) })
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
