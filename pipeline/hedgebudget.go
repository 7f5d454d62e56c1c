package pipeline

import (
	"sync"

	"github.com/ragfuse/ragfuse/breaker"
)

// Defaults of a hedged stage.
const (
	defaultHedgeBudget = 0.1
	hedgeWindow        = 20 // calls the budget counts over with a time-based breaker window
)

// hedgeBudget caps the hedges of one stage to a share of its calls over
// its breaker's window (the last Window calls; hedgeWindow with a
// time-based window) while its breaker is closed and its window holds no
// failure or slow call: on a healthy but slow day at most that share of
// the calls (or one call per window) are made twice. With the breaker not
// closed, or failures or slow calls in its window, the model is in
// trouble and every call may be hedged. It is safe for concurrent use.
type hedgeBudget struct {
	share float64

	mu     sync.Mutex // guards the fields below
	ring   []uint16   // hedges credited to each of the last calls, the newest at next-1
	next   int        // where the next call goes
	calls  int        // calls in ring, at most len(ring)
	hedges int        // the sum of ring
}

// newHedgeBudget returns the budget of a stage whose breaker has config
// cfg (defaults filled in), share of 0 meaning defaultHedgeBudget.
func newHedgeBudget(share float64, cfg breaker.Config) *hedgeBudget {
	if share <= 0 {
		share = defaultHedgeBudget
	}
	n := cfg.Window
	if cfg.WindowDuration > 0 || n <= 0 {
		n = hedgeWindow
	}
	return &hedgeBudget{share: min(share, 1), ring: make([]uint16, n)}
}

// record counts one call of the stage.
func (h *hedgeBudget) record() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hedges -= int(h.ring[h.next]) // the oldest call leaves the window
	h.ring[h.next] = 0
	h.next = (h.next + 1) % len(h.ring)
	h.calls = min(h.calls+1, len(h.ring))
}

// take reports whether one more hedge is allowed, counting it if so: always
// while b, the stage's breaker, is not closed or its window holds a
// failure or a slow call; otherwise while the hedges, this one included,
// are at most the budget's share of the calls in the window, or one.
func (h *hedgeBudget) take(b *breaker.Breaker) bool {
	snap := b.Snapshot()
	healthy := snap.State == breaker.StateClosed && snap.Failures == 0 && snap.SlowCalls == 0
	h.mu.Lock()
	defer h.mu.Unlock()
	if healthy && float64(h.hedges+1) > max(1, h.share*float64(h.calls)) {
		return false
	}
	newest := (h.next + len(h.ring) - 1) % len(h.ring)
	if h.ring[newest] < ^uint16(0) {
		h.ring[newest]++
		h.hedges++
	}
	return true
}
