package pipeline

import (
	"errors"
	"net/url"
	"strconv"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// outcomeOf maps a tier or model call's failure kind to what its breaker
// hears (the table in the package doc). The empty Kind is a success.
func outcomeOf(k tiers.Kind) breaker.Outcome {
	switch k {
	case "":
		return breaker.Success
	case tiers.KindTimeout, tiers.KindConnection, tiers.KindServer, tiers.KindMalformed,
		tiers.KindEmpty, tiers.KindAuth, tiers.KindInterrupted, tiers.KindOther:
		return breaker.Failure
	}
	// rate_limited, context_length, content_filter, bad_request, canceled,
	// no_docs, miss, unavailable: not the service's failure.
	return breaker.Ignored
}

// describe returns a short, secret-free description of err for an
// Attempt: the HTTP status and Retry-After when known, else the message of
// the innermost cause, cut to a readable length.
func describe(err error) string {
	if err == nil {
		return ""
	}
	var te *tiers.Error
	if errors.As(err, &te) {
		switch {
		case te.Status != 0 && te.RetryAfter > 0:
			return "HTTP " + strconv.Itoa(te.Status) + ", retry after " + te.RetryAfter.String()
		case te.Status != 0:
			return "HTTP " + strconv.Itoa(te.Status)
		case te.Err != nil:
			err = te.Err
		default:
			return string(te.Kind)
		}
	}
	s := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		// net/http hides a URL's password but keeps its query, where some
		// gateways take a key: the endpoint is named without either.
		s = ue.Op + " " + endpoint(ue.URL) + ": " + ue.Err.Error()
	}
	const maxLen = 160
	if len(s) > maxLen {
		cut := maxLen
		for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// endpoint returns raw, a URL, as scheme://host/path: without user
// information, query or fragment.
func endpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(endpoint)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
