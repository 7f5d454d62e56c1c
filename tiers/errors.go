package tiers

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kind is the category of a tier failure. The pipeline maps a Kind to a
// breaker outcome (see pipeline's package doc for the table).
type Kind string

// The failure kinds.
const (
	KindTimeout       Kind = "timeout"        // the call's deadline passed
	KindConnection    Kind = "connection"     // refused, reset, broken transport
	KindServer        Kind = "server_error"   // HTTP 5xx
	KindMalformed     Kind = "malformed"      // a response that does not decode
	KindEmpty         Kind = "empty"          // a response without an answer
	KindRateLimited   Kind = "rate_limited"   // HTTP 429
	KindAuth          Kind = "auth"           // HTTP 401/403: bad or missing key
	KindContextLength Kind = "context_length" // HTTP 400: the prompt is too long
	KindContentFilter Kind = "content_filter" // the provider refused the content
	KindBadRequest    Kind = "bad_request"    // another HTTP 4xx: the request's fault
	KindCanceled      Kind = "canceled"       // the caller went away
	KindInterrupted   Kind = "interrupted"    // a stream broke or stalled after tokens were sent
	KindNoDocs        Kind = "no_docs"        // retrieval found nothing to answer from
	KindMiss          Kind = "miss"           // a cache had no entry
	KindUnavailable   Kind = "unavailable"    // every candidate was skipped (breaker open, cooling down)
	KindRetrieving    Kind = "retrieving"     // the tier's time ran out waiting for the question's documents; no model was called
	KindOther         Kind = "other"
)

// ErrUnavailable reports that a tier had nothing it could try: every model
// candidate was open or cooling down.
var ErrUnavailable = errors.New("tiers: no candidate available")

// Error is a tier failure with its category. It wraps the underlying error.
type Error struct {
	Kind       Kind
	Tier       string
	Model      string        // the model candidate, if any
	Status     int           // HTTP status, if any
	RetryAfter time.Duration // for KindRateLimited: how long the model asked us to wait
	Usage      Usage         // tokens spent on the failed call, when known (wasted tokens)
	Err        error
}

func (e *Error) Error() string {
	s := "tiers: " + e.Tier
	if e.Model != "" {
		s += " (" + e.Model + ")"
	}
	s += ": " + string(e.Kind)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of err: the Kind of the first *Error in its chain,
// KindCanceled or KindTimeout for context errors, KindOther otherwise.
func KindOf(err error) Kind {
	if err == nil {
		return "" // before te is declared: it escapes, and success must not allocate
	}
	var te *Error
	switch {
	case errors.As(err, &te):
		return te.Kind
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	}
	return KindOther
}

var errNoEmbedder = errors.New("no embedder configured")
