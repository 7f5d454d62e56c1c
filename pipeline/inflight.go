package pipeline

import (
	"sync"
	"sync/atomic"
)

// inflightGate lets questions in until it is closed, and tells Close when the
// last one has left. It is one atomic word, so that a question pays one
// atomic add to enter and one to leave, however many run at once.
type inflightGate struct {
	n       atomic.Int64  // questions in flight, plus gateClosed once closed
	drained chan struct{} // closed when the gate is closed and empty
	once    sync.Once     // closes drained
}

const gateClosed = 1 << 62

// enter lets a question in; it fails once the gate is closed. A question
// let in must leave.
func (g *inflightGate) enter() bool {
	if g.n.Add(1)&gateClosed == 0 {
		return true
	}
	g.leave()
	return false
}

func (g *inflightGate) leave() {
	if g.n.Add(-1) == gateClosed {
		g.once.Do(g.drain)
	}
}

func (g *inflightGate) drain() { close(g.drained) }

func (g *inflightGate) closed() bool { return g.n.Load()&gateClosed != 0 }

// close closes the gate; it returns false if it was closed already.
func (g *inflightGate) close() bool {
	old := g.n.Or(gateClosed)
	if old&gateClosed != 0 {
		return false
	}
	if old == 0 {
		g.once.Do(g.drain)
	}
	return true
}
