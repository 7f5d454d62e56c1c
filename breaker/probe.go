package breaker

import "errors"

// ErrProbing is returned by Allow and Do while the breaker is half-open and
// Config.ActiveProbes leaves the probes to a prober (AllowProbe).
// errors.Is(ErrProbing, ErrNotPermitted) is true.
var ErrProbing error = &rejection{"breaker: half-open, probed by a prober, call not permitted"}

// ErrNoProbe is returned by AllowProbe while the breaker is closed: there
// is nothing to probe. It is not a rejection and is not counted as one.
var ErrNoProbe = errors.New("breaker: closed, no probe to make")

// AllowProbe asks for the right to make one half-open probe, as a prober
// does for a breaker with Config.ActiveProbes (it works on any breaker).
// An OPEN breaker whose open time is up turns HALF_OPEN first. It returns
// a probe permit (Permit.Probe is true) as Allow does while half-open:
// within Config.HalfOpenMaxCalls and, with a Store, under the cluster-wide
// probe lease (AcquireProbe). It returns ErrOpen while open,
// ErrTooManyProbes when the slots or the lease are taken, and ErrNoProbe
// while closed. Report the probe's outcome as any permit's.
func (b *Breaker) AllowProbe() (Permit, error) { return b.allowSlow(true) }
