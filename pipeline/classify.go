package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

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
	// no_docs, miss, unavailable, retrieving: not the service's failure.
	return breaker.Ignored
}

// reasonOf returns what a breaker keeps of a call that ended with kind k,
// described as why: nothing for a success.
func reasonOf(k tiers.Kind, why string) breaker.Reason {
	if k == "" {
		return breaker.Reason{}
	}
	return breaker.Reason{Kind: string(k), Message: why}
}

// classifier is the innermost guard: it calls the stage's tier (to
// stream, with the call's stream request, if it can) with the call's
// candidate guard, and classifies the outcome before the guards
// around it hear it. A failure while the caller is gone is KindCanceled:
// not the tier's fault. It reports the lookups of cache tiers
// (EventCache), records the stage's attempt unless the tier reported
// candidate attempts of its own, and names the stage's source on an
// answer that names none.
type classifier struct{}

func (*classifier) call(ctx context.Context, c *call) (tiers.Answer, error) {
	r, s := c.run, c.stage
	q := c.q
	q.Guard = c.guard
	waited := q.Memo.Waited()
	a, err := callTier(ctx, s.Tier, q, c.sr)
	c.elapsed = time.Since(c.start)
	if s.source != tiers.SourceRetrieval { // the retrieval tier's time is its own work
		c.retrieving = q.Memo.Waited() - waited
	}
	c.kind = tiers.KindOf(err)
	if err != nil {
		c.why = describe(err)
		switch {
		case callerGone(r.caller):
			c.kind = tiers.KindCanceled
		case c.guard.lostHedge():
			c.kind = kindHedged
		}
	}
	if s.cacheTyp != "" && (err == nil || c.kind == tiers.KindMiss) {
		reason := "miss"
		if err == nil {
			reason = s.cacheTyp
		}
		r.p.emit(Event{Kind: EventCache, Tenant: q.Tenant, Tier: s.name, Reason: reason})
	}
	if c.guard.reported.Load() == 0 {
		at := Attempt{Tier: s.name, Outcome: OutcomeSuccess, Duration: c.elapsed, Model: a.Model, Usage: a.Usage}
		if err != nil {
			var te *tiers.Error
			if errors.As(err, &te) {
				at.Model, at.Usage = te.Model, te.Usage
			}
			at.Outcome, at.Error = string(c.kind), c.why
		}
		r.record(at)
	}
	if (err == nil || a.Interrupted) && a.Source == "" {
		a.Source = s.source
	}
	return a, err
}

// callTier calls t (to stream, with sr, if it can), turning a panic into
// an error so that one bad tier cannot take the process down.
func callTier(ctx context.Context, t tiers.Tier, q tiers.Query, sr *tiers.StreamRequest) (a tiers.Answer, err error) {
	defer func() {
		if v := recover(); v != nil {
			a, err = tiers.Answer{}, &tiers.Error{Kind: tiers.KindOther, Tier: t.Name(), Err: fmt.Errorf("tier panicked: %v", v)}
		}
	}()
	if st, ok := t.(tiers.StreamTier); ok && sr != nil {
		return st.AnswerStream(ctx, q, *sr)
	}
	return t.Answer(ctx, q)
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
