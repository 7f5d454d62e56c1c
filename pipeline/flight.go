package pipeline

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ragfuse/ragfuse/tiers"
)

// fly runs q, admitted at start, as one flight of the identical questions
// in flight (see flightKey), the Ask half of the stage loop: the leader
// runs it on its caller's goroutine; the others wait for it, each no
// longer than its own context and budget. A flight whose leader's caller
// went away ends canceled; the callers still waiting then join the
// question again (one of them leading a new flight), each within what is
// left of its own budget.
func (p *Pipeline) fly(ctx context.Context, q tiers.Query, degraded bool, start time.Time) (*Result, error) {
	key := flightKey(q, degraded)
	r := new(run) // holds the flight too, if this caller leads it
	for {
		f, done := p.flights.join(key, &r.flight)
		if done == nil {
			res, err := p.lead(ctx, r, q, degraded, start)
			p.flights.end(key, f, res, err)
			return res, err
		}
		waited := p.wait(ctx, done, start)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !waited {
			// The flight outlasted this caller's budget (its leader asked
			// later): the caller runs the question alone, with what is
			// left of its own budget.
			return p.lead(ctx, r, q, degraded, start)
		}
		if isContextErr(f.err) {
			continue
		}
		res := shared(f.res)
		if f.err == nil && res != nil {
			// This question was answered too, by the flight's run.
			p.emit(Event{Kind: EventAnswered, Tenant: q.Tenant, Tier: string(res.Source), Result: res})
		}
		return res, f.err
	}
}

// wait waits for done, a flight's end, no longer than ctx and the budget
// of a question asked at start. It reports whether the flight ended.
func (p *Pipeline) wait(ctx context.Context, done <-chan struct{}, start time.Time) bool {
	var budgetOver <-chan time.Time
	if d, ok := ctx.Deadline(); !ok || d.After(start.Add(p.timeout)) {
		// The request timeout ends the budget before ctx does.
		t := time.NewTimer(time.Until(start.Add(p.timeout)))
		defer t.Stop()
		budgetOver = t.C
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
	case <-budgetOver:
	}
	return false
}

// flightGroup holds the questions in flight by flight key. It stands in
// for golang.org/x/sync/singleflight, whose Do cannot be left by a caller
// whose context ends, and whose DoChan puts every run on a goroutine of
// its own: that cost a cache hit through the API 6 allocations and half
// as much time again (BenchmarkAskCacheHit in package api). If the
// leader's caller went away, the callers still waiting join the question
// again, one of them leading; one whose budget ends while it waits runs
// the question alone with what is left.
type flightGroup struct {
	mu sync.Mutex
	m  map[string]*flight
}

// flight is one run shared by the callers of one key. res and err are
// written before done is closed.
type flight struct {
	done    chan struct{} // made when a second caller joins
	waiters int           // the callers that joined it
	res     *Result
	err     error
}

// join returns the flight of key. done is nil when the caller starts the
// flight, with mine (a new flight), and must run it and end it; otherwise
// done is closed when the flight ends.
func (g *flightGroup) join(key string, mine *flight) (f *flight, done <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f = g.m[key]; f != nil {
		if f.done == nil {
			f.done = make(chan struct{})
		}
		f.waiters++
		return f, f.done
	}
	if g.m == nil {
		g.m = make(map[string]*flight)
	}
	g.m[key] = mine
	return mine, nil
}

// end ends flight f of key with its run's outcome.
func (g *flightGroup) end(key string, f *flight, res *Result, err error) {
	g.mu.Lock()
	f.res, f.err = res, err
	delete(g.m, key)
	done := f.done
	g.mu.Unlock()
	if done != nil {
		close(done)
	}
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// shared returns a copy of r for a caller that joined another's flight.
func shared(r *Result) *Result {
	if r == nil {
		return nil
	}
	c := *r
	c.Shared = true
	c.Attempts = append([]Attempt(nil), r.Attempts...)
	return &c
}

// flightKey returns the singleflight key of q: its tenant, the admission
// mode, the digest of its history (tiers.HistoryDigest; none for a lone
// question) and its question trimmed, with runs of white space collapsed
// and lower-cased. The same question in two conversations gets two keys,
// so it never shares an answer made for another conversation. Every
// flight of identical questions (Ask's, a stream's) keys by it.
func flightKey(q tiers.Query, degraded bool) string {
	tenant, question := q.Tenant, q.Question
	digest := tiers.HistoryDigest(q.History)
	var b strings.Builder
	b.Grow(len(tenant) + len(digest) + len(question) + 5)
	b.WriteString(tenant)
	if degraded {
		b.WriteString("\x00d\x00")
	} else {
		b.WriteString("\x00f\x00")
	}
	if digest != "" { // fixed length, so the question that follows cannot pose as one
		b.WriteByte('h')
		b.WriteString(digest)
	}
	b.WriteByte(0)
	space, started := false, false
	for i := 0; i < len(question); {
		c := question[i]
		if c < utf8.RuneSelf { // ASCII, the common case: no decoding
			i++
			switch {
			case c == ' ' || c >= '\t' && c <= '\r':
				space = started
				continue
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			}
			if space {
				b.WriteByte(' ')
				space = false
			}
			b.WriteByte(c)
			started = true
			continue
		}
		r, n := utf8.DecodeRuneInString(question[i:])
		i += n
		if unicode.IsSpace(r) {
			space = started
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(unicode.ToLower(r))
		started = true
	}
	return b.String()
}
