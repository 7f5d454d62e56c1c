package redisstore

import (
	"sync"
	"testing"
)

// TestStripedCountsEveryAdd guards the striped call counter: adds from
// many goroutines are all counted, once, across Swaps.
func TestStripedCountsEveryAdd(t *testing.T) {
	s := newStriped()
	const goroutines, adds = 16, 1000
	var wg sync.WaitGroup
	var swapped int64
	var mu sync.Mutex
	for range goroutines {
		wg.Go(func() {
			for i := range adds {
				s.Add()
				if i%250 == 0 {
					n := s.Swap()
					mu.Lock()
					swapped += n
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if got := swapped + s.Swap(); got != goroutines*adds {
		t.Fatalf("counted %d, want %d", got, goroutines*adds)
	}
	if got := s.Swap(); got != 0 {
		t.Fatalf("after Swap the counter holds %d, want 0", got)
	}
}
