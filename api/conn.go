package api

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// connectionWait is how long a connection beyond max_connections waits for
// another to close before it is closed unanswered.
const connectionWait = time.Second

// limitListener accepts at most cap(sem) connections at once, like
// golang.org/x/net/netutil.LimitListener, except that a connection beyond
// them is not left waiting in the kernel's queue for as long as the others
// stay: it is accepted and waits up to wait for a slot, and is closed if
// none frees. While one such wait has just run out (less than wait ago),
// further connections beyond the limit are closed at once, so that a flood
// is refused quickly instead of queueing behind one wait after another.
// Accept is called from one goroutine (http.Server's); Close and the
// connections' Close from any.
type limitListener struct {
	net.Listener
	sem     chan struct{}
	wait    time.Duration
	refused func() // called for each connection closed unanswered; may be nil

	lastRefusal time.Time // when a wait last ran out; Accept's alone
	open        atomic.Int64
	closeOnce   sync.Once
	done        chan struct{} // closed by Close
}

func newLimitListener(l net.Listener, n int, wait time.Duration, refused func()) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), wait: wait, refused: refused, done: make(chan struct{})}
}

// Accept returns the next connection that gets a slot; it closes those
// that get none in time.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.acquire() {
			l.open.Add(1)
			return &limitConn{Conn: c, l: l}, nil
		}
		_ = c.Close()
		if l.refused != nil {
			l.refused()
		}
	}
}

// acquire takes a slot: at once, or within l.wait unless a wait ran out
// less than l.wait ago. It reports false without one.
func (l *limitListener) acquire() bool {
	select {
	case l.sem <- struct{}{}:
		return true
	default:
	}
	if time.Since(l.lastRefusal) < l.wait {
		return false
	}
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.sem <- struct{}{}:
		return true
	case <-t.C:
		l.lastRefusal = time.Now()
	case <-l.done:
	}
	return false
}

// Open returns the number of connections holding a slot.
func (l *limitListener) Open() int64 { return l.open.Load() }

// Close closes the listener; connections already accepted stay open.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitConn gives its slot back when it is closed, once.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		<-c.l.sem
	})
	return err
}
