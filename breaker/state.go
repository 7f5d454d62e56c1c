package breaker

import (
	"errors"
	"strconv"
)

// State is the state of a Breaker.
type State uint8

// The three states. The zero State is StateClosed.
const (
	// StateClosed lets every call through and watches their outcomes.
	StateClosed State = iota
	// StateHalfOpen lets a few probe calls through to test recovery.
	StateHalfOpen
	// StateOpen rejects every call until its open period ends.
	StateOpen
)

// String returns "closed", "half_open" or "open".
func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateHalfOpen:
		return "half_open"
	case StateOpen:
		return "open"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Outcome is what a call reports to its Breaker.
type Outcome uint8

// The outcomes of a call. Values above Ignored are treated as Ignored.
const (
	// Success is a call that worked (slow or not).
	Success Outcome = iota
	// Failure is a call that failed for the dependency's sake.
	Failure
	// Ignored is neither: the caller cancelled, or the request was at fault.
	// It counts nowhere, but it frees a half-open probe slot.
	Ignored
)

// String returns "success", "failure" or "ignored".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignored:
		return "ignored"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// ErrNotPermitted is the category of every rejection by a Breaker.
// Test for it with errors.Is.
var ErrNotPermitted = errors.New("breaker: call not permitted")

// ErrOpen is returned by Allow and Do while the breaker is open.
// errors.Is(ErrOpen, ErrNotPermitted) is true.
var ErrOpen error = &rejection{"breaker: open, call not permitted"}

// ErrTooManyProbes is returned by Allow and Do while the breaker is half-open
// and every probe slot is taken (in this process, or in the cluster when a
// Store holds the probe lease). errors.Is(ErrTooManyProbes, ErrNotPermitted)
// is true.
var ErrTooManyProbes error = &rejection{"breaker: half-open, too many probes, call not permitted"}

// rejection is the type of the rejection sentinels.
type rejection struct{ msg string }

func (e *rejection) Error() string { return e.msg }
func (e *rejection) Unwrap() error { return ErrNotPermitted }
