package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/tiers"
)

// fakeTier answers with fn, counting calls and the time it was given.
type fakeTier struct {
	name   string
	source tiers.Source
	fn     func(ctx context.Context, q tiers.Query) (tiers.Answer, error)
	calls  atomic.Int64

	mu      sync.Mutex
	budgets []time.Duration // the time left on each call's context
}

func (f *fakeTier) Name() string         { return f.name }
func (f *fakeTier) Source() tiers.Source { return f.source }
func (f *fakeTier) Answer(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
	f.calls.Add(1)
	if d, ok := ctx.Deadline(); ok {
		f.mu.Lock()
		f.budgets = append(f.budgets, time.Until(d))
		f.mu.Unlock()
	}
	return f.fn(ctx, q)
}

// given returns the time left on the context of each call so far.
func (f *fakeTier) given() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.budgets...)
}

func answers(text string) func(context.Context, tiers.Query) (tiers.Answer, error) {
	return func(context.Context, tiers.Query) (tiers.Answer, error) { return tiers.Answer{Text: text}, nil }
}

func fails(kind tiers.Kind) func(context.Context, tiers.Query) (tiers.Answer, error) {
	return func(context.Context, tiers.Query) (tiers.Answer, error) {
		return tiers.Answer{}, &tiers.Error{Kind: kind, Tier: "fake"}
	}
}

// hangs waits for its context, as a hung upstream would.
func hangs(ctx context.Context, _ tiers.Query) (tiers.Answer, error) {
	<-ctx.Done()
	return tiers.Answer{}, &tiers.Error{Kind: tiers.KindOf(ctx.Err()), Err: ctx.Err()}
}

func tier(name string, src tiers.Source, fn func(context.Context, tiers.Query) (tiers.Answer, error)) *fakeTier {
	return &fakeTier{name: name, source: src, fn: fn}
}

// gate returns a tier function that reports each call on entered and
// answers text once release is closed, or fails when its context ends
// first.
func gate(text string) (fn func(context.Context, tiers.Query) (tiers.Answer, error), entered, release chan struct{}) {
	entered, release = make(chan struct{}, 4), make(chan struct{})
	fn = func(ctx context.Context, _ tiers.Query) (tiers.Answer, error) {
		entered <- struct{}{}
		select {
		case <-release:
			return tiers.Answer{Text: text}, nil
		case <-ctx.Done():
			return tiers.Answer{}, ctx.Err()
		}
	}
	return fn, entered, release
}

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Observe(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) kinds(k EventKind) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// newTestPipeline builds a pipeline over stages with a manual clock.
func newTestPipeline(t *testing.T, opts Options) (*Pipeline, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(epoch)
	if opts.Clock == nil {
		opts.Clock = clk
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, clk
}

// outcomes returns "tier/model:outcome" for each attempt.
func outcomes(res *Result) []string {
	var out []string
	for _, a := range res.Attempts {
		s := a.Tier
		if a.Model != "" {
			s += "/" + a.Model
		}
		out = append(out, s+":"+a.Outcome)
	}
	return out
}

func ask(t *testing.T, p *Pipeline, q string) *Result {
	t.Helper()
	res, err := p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: q})
	if err != nil {
		t.Fatalf("Ask(%q): %v", q, err)
	}
	return res
}
