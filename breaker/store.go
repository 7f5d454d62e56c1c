package breaker

import "time"

// Shared is the part of a breaker's state that processes share.
type Shared struct {
	State     State
	OpenUntil time.Time // zero unless State is StateOpen
	// Origin identifies the announcing breaker (set by the breaker when it
	// publishes). Breaker.Apply ignores its own announcements, so a Store
	// may deliver an announcement to every breaker of that name, the
	// announcer included.
	Origin uint64
}

// Store shares breaker state across processes. A breaker created with a
// Store publishes its local transitions to it, asks it for the cluster-wide
// probe lease before its first half-open probe, and tells it every CLOSED
// outcome. The CLOSED path calls only Record, so Record (like Publish) must
// not block: buffer, sample or hand off to a goroutine. Implementations must
// be safe for concurrent use.
type Store interface {
	// Publish announces a local transition of breaker name.
	Publish(name string, s Shared)
	// Record counts one CLOSED outcome (Success or Failure; slow marks a
	// slow success) for cluster-wide aggregation.
	Record(name string, o Outcome, slow bool)
	// AcquireProbe asks for the exclusive right, held for lease, to probe
	// half-open breaker name. A breaker that gets it probes without asking
	// again until the lease ends, and its probes are void by then; one that
	// does not rejects the call with ErrTooManyProbes. A store that cannot
	// reach its backend should answer true, so that an outage degrades to
	// local behaviour.
	AcquireProbe(name string, lease time.Duration) bool
}

// Attacher is implemented by a Store that wants to know the breakers using
// it, for example to call Apply on them when another process announces a
// change. New calls Attach once for every breaker created with such a
// Store, after the breaker is ready for use.
type Attacher interface {
	Attach(b *Breaker)
}

// Recorder counts the CLOSED outcomes of one breaker for a Store, like
// Store.Record without the name. It must not block.
type Recorder interface {
	Record(o Outcome, slow bool)
}

// Binder is implemented by a Store that hands each breaker a Recorder of
// its own, so that the CLOSED path reaches the store's counters without
// looking the breaker's name up. New calls Bind once for every breaker
// created with such a Store, before Attach; the breaker then calls the
// Recorder in place of Store.Record.
type Binder interface {
	Bind(b *Breaker) Recorder
}
