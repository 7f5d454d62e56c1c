package redisstore

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// striped is a counter spread over cache lines, so that goroutines on
// different cores seldom write the same line. Add picks its cell from the
// address of the calling goroutine's stack, which stays the same for a
// goroutine and differs between goroutines: a hint, not a correctness
// matter (any cell may be used by anyone). BenchmarkAllowReport/Parallel
// shows the need: one shared counter made the Redis store's CLOSED path
// markedly slower than the breaker's own under parallel load. It is safe
// for concurrent use; the zero value must be initialized by newStriped.
type striped struct {
	cells []cell
	shift uint // 64 - log2(len(cells))
}

// cell is one counter on a cache line of its own.
type cell struct {
	n atomic.Int64
	_ [56]byte
}

func newStriped() striped {
	n, bits := 1, uint(0)
	for n < 4*runtime.GOMAXPROCS(0) && n < 64 { // spare cells: fewer goroutines share one
		n, bits = n<<1, bits+1
	}
	return striped{cells: make([]cell, n), shift: 64 - bits}
}

// Add adds one.
func (s *striped) Add() {
	var here byte
	// Goroutine stacks are at least 8 KiB and aligned to their size, so
	// the address above its low 13 bits tells goroutines apart; a
	// multiplicative hash spreads those bits over the cells (at least 4,
	// so shift is below 64).
	h := uint64(uintptr(unsafe.Pointer(&here))>>13) * 0x9E3779B97F4A7C15
	s.cells[h>>s.shift].n.Add(1)
}

// Swap returns the count and sets it to zero. Adds made meanwhile are
// counted either now or at the next Swap.
func (s *striped) Swap() int64 {
	var sum int64
	for i := range s.cells {
		if c := &s.cells[i].n; c.Load() != 0 { // an idle cell's line stays shared
			sum += c.Swap(0)
		}
	}
	return sum
}
