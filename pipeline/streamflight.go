package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

// Identical streamed questions in flight together (the same flight key as
// Ask's, see flightKey) share one run and so one upstream stream. The run
// goes on a goroutine of its own, writing its events to the flight's log;
// each caller of Stream reads the log from the start at its own pace and
// calls its own receiver, on its own goroutine. A caller that leaves (its
// context ends, its receiver fails) leaves the others their stream; when
// the last one leaves, the run is cancelled and Stream returns when it
// has ended. The log holds the answer's events, which the Result holds
// anyway; past maxFlightLog bytes of text the flight takes no more
// callers, and a later identical question starts a run of its own.

// maxFlightLog is the text a stream flight's log holds before the flight
// stops taking callers.
const maxFlightLog = 1 << 20

// errNoReceivers stops a stream flight's run when every caller has left.
var errNoReceivers = errors.New("pipeline: every receiver of the stream left")

// streamFlight is one streamed run shared by the callers of one key.
type streamFlight struct {
	g      *streamFlights
	key    string
	tenant string
	cancel context.CancelFunc // cancels the run
	ended  chan struct{}      // closed when the run has ended

	mu     sync.Mutex // guards the fields below
	events []StreamEvent
	text   int             // bytes of text in events
	kicks  []chan struct{} // one per caller reading the log (room for one): kicked at each event and at the end
	subs   int             // callers reading the log
	done   bool            // the run ended, with res and err
	res    *Result
	err    error
}

// streamFlights holds the stream flights that take callers, by key.
type streamFlights struct {
	mu sync.Mutex
	m  map[string]*streamFlight
}

// streamShared runs q, admitted at start, as one flight of the identical
// streamed questions in flight, streaming its events to fn.
func (p *Pipeline) streamShared(ctx context.Context, q tiers.Query, degraded bool, start time.Time,
	fn func(StreamEvent) error) (*Result, error) {
	key := flightKey(q, degraded)
	kick := make(chan struct{}, 1)
	f, leads := p.streams.join(key, q.Tenant, kick)
	if leads {
		p.launch(ctx, f, q, degraded, start)
	}
	return f.follow(ctx, fn, kick, leads, p)
}

// launch starts the run of flight f, the flight of q led by a caller with
// ctx: its budget and deadline are the leader's, but not its
// cancellation.
func (p *Pipeline) launch(ctx context.Context, f *streamFlight, q tiers.Query, degraded bool, start time.Time) {
	rctx := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		rctx, f.cancel = context.WithDeadline(rctx, d)
	} else {
		rctx, f.cancel = context.WithCancel(rctx)
	}
	go func() {
		defer close(f.ended)
		defer f.cancel()
		res, err := p.lead(rctx, &run{stream: &streamRun{fn: f.append}}, q, degraded, start)
		f.finish(res, err)
	}()
}

// join returns the flight of key that takes callers, counting the caller,
// kicked by kick, in; leads is set when the caller starts a new one, whose
// run it must launch. A flight every caller has left is being cancelled
// and takes none, though leave may not have dropped it yet.
func (g *streamFlights) join(key, tenant string, kick chan struct{}) (f *streamFlight, leads bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f = g.m[key]; f != nil && f.subscribe(kick) {
		return f, false
	}
	if g.m == nil {
		g.m = make(map[string]*streamFlight)
	}
	f = &streamFlight{g: g, key: key, tenant: tenant, subs: 1, kicks: []chan struct{}{kick},
		events: make([]StreamEvent, 0, 16), ended: make(chan struct{})}
	g.m[key] = f
	return f, true
}

// subscribe counts the caller kicked by kick in, unless every caller has
// left f. It reports whether it did.
func (f *streamFlight) subscribe(kick chan struct{}) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == 0 {
		return false
	}
	f.subs++
	f.kicks = append(f.kicks, kick)
	return true
}

// drop stops flight f taking callers.
func (g *streamFlights) drop(f *streamFlight) {
	g.mu.Lock()
	if g.m[f.key] == f {
		delete(g.m, f.key)
	}
	g.mu.Unlock()
}

// append adds e to the log: the run's receiver. It fails when no caller
// is left to read it.
func (f *streamFlight) append(e StreamEvent) error {
	f.mu.Lock()
	if f.subs == 0 {
		f.mu.Unlock()
		return errNoReceivers
	}
	f.events = append(f.events, e)
	f.text += len(e.Text)
	full := f.text > maxFlightLog
	f.kickLocked()
	f.mu.Unlock()
	if full {
		f.g.drop(f)
	}
	return nil
}

// finish ends the log with the run's outcome.
func (f *streamFlight) finish(res *Result, err error) {
	f.g.drop(f)
	f.mu.Lock()
	f.done, f.res, f.err = true, res, err
	f.kickLocked()
	f.mu.Unlock()
}

// kickLocked tells each caller reading the log that it changed; it
// requires f.mu.
func (f *streamFlight) kickLocked() {
	for _, k := range f.kicks {
		select {
		case k <- struct{}{}:
		default: // kicked already
		}
	}
}

// follow sends the flight's events to fn, from the first, until the run
// ends, ctx ends or fn fails; leads tells the caller that started the run,
// whose Result is the run's own (the others get a copy marked Shared).
func (f *streamFlight) follow(ctx context.Context, fn func(StreamEvent) error, kick chan struct{}, leads bool, p *Pipeline) (*Result, error) {
	defer f.leave(kick)
	for next := 0; ; {
		f.mu.Lock()
		events, done, res, err := f.events[next:], f.done, f.res, f.err
		f.mu.Unlock()
		for _, e := range events {
			next++
			if e.Kind == StreamDone && !leads {
				e.Result = shared(e.Result)
			}
			if err := deliver(fn, e); err != nil {
				return nil, err
			}
			if e.Kind == StreamDone {
				if !leads {
					// This question was answered too, by the flight's run.
					p.emit(Event{Kind: EventAnswered, Tenant: f.tenant, Tier: string(e.Result.Source), Result: e.Result})
				}
				return e.Result, nil
			}
		}
		if len(events) > 0 {
			continue
		}
		if done {
			if !leads {
				res = shared(res)
			}
			return res, err
		}
		select {
		case <-kick:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// leave counts the caller kicked by kick out. The last one cancels the
// run, if it is still going, and waits for it to end.
func (f *streamFlight) leave(kick chan struct{}) {
	f.mu.Lock()
	f.kicks = slices.DeleteFunc(f.kicks, func(k chan struct{}) bool { return k == kick })
	f.subs--
	last := f.subs == 0
	f.mu.Unlock()
	if last {
		f.g.drop(f)
		f.cancel()
		<-f.ended
	}
}

// deliver passes e to fn, taking a panic in fn as its error, with the
// stack.
func deliver(fn func(StreamEvent) error, e StreamEvent) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("pipeline: stream receiver panicked: %v\n%s", v, debug.Stack())
		}
	}()
	return fn(e)
}
