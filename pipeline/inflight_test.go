package pipeline

import (
	"sync"
	"testing"
)

// The in-flight gate lets questions in until closed, and tells Close when
// the last one has left: not before, and once however questions come and
// go after the gate closed.
func TestInflightGate(t *testing.T) {
	g := inflightGate{drained: make(chan struct{})}
	if !g.enter() || !g.enter() {
		t.Fatal("open gate refused a question")
	}
	if !g.close() {
		t.Fatal("first close reported the gate closed already")
	}
	if g.close() {
		t.Fatal("second close reported it closed the gate")
	}
	if !g.closed() {
		t.Fatal("closed gate reads open")
	}
	if g.enter() {
		t.Fatal("closed gate let a question in")
	}
	g.leave()
	select {
	case <-g.drained:
		t.Fatal("drained with a question still in flight")
	default:
	}
	g.leave()
	select {
	case <-g.drained:
	default:
		t.Fatal("not drained after the last question left")
	}
	// Late questions refused after the drain do not close drained again
	// (which would panic).
	for range 3 {
		if g.enter() {
			t.Fatal("drained gate let a question in")
		}
	}
}

func TestInflightGateCloseEmpty(t *testing.T) {
	g := inflightGate{drained: make(chan struct{})}
	g.close()
	select {
	case <-g.drained:
	default:
		t.Fatal("an empty gate is not drained on close")
	}
}

// Under concurrent questions, Close's wait ends only after every question
// let in has left.
func TestInflightGateConcurrent(t *testing.T) {
	for range 50 {
		g := inflightGate{drained: make(chan struct{})}
		var mu sync.Mutex
		in := 0
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 100 {
					if !g.enter() {
						return
					}
					mu.Lock()
					in++
					mu.Unlock()
					mu.Lock()
					in--
					mu.Unlock()
					g.leave()
				}
			}()
		}
		g.close()
		<-g.drained
		mu.Lock()
		n := in
		mu.Unlock()
		if n != 0 {
			t.Fatalf("drained with %d questions in flight", n)
		}
		wg.Wait()
	}
}
