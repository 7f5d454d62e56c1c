package pipeline

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ragfuse/ragfuse/tiers"
)

// gatedStream is a streaming tier that sends its first piece of text at
// once and the second when release is closed, or fails when its context
// ends first; it counts its calls and the calls cancelled.
type gatedStream struct {
	release   chan struct{}
	calls     atomic.Int64
	cancelled atomic.Int64
}

func (g *gatedStream) Name() string         { return "primary" }
func (g *gatedStream) Source() tiers.Source { return tiers.SourcePrimary }
func (g *gatedStream) Answer(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
	return g.AnswerStream(ctx, q, tiers.StreamRequest{})
}

func (g *gatedStream) AnswerStream(ctx context.Context, _ tiers.Query, r tiers.StreamRequest) (tiers.Answer, error) {
	g.calls.Add(1)
	fail := func(err error) (tiers.Answer, error) {
		g.cancelled.Add(1)
		return tiers.Answer{}, &tiers.Error{Kind: tiers.KindCanceled, Tier: "primary", Err: err}
	}
	if err := r.Emit(tiers.Delta{Model: "m", Text: "Returns are free"}); err != nil {
		return fail(err)
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	if err := r.Emit(tiers.Delta{Model: "m", Text: " within 30 days."}); err != nil {
		return fail(err)
	}
	return tiers.Answer{Text: "Returns are free within 30 days.", Model: "m"}, nil
}

// streamCrowd streams one question n times at once over a pipeline whose
// primary is tier, each caller with a context of its own. Caller 0 starts
// first and has its first delta before the others start: it leads the
// flight.
type streamCrowd struct {
	p       *Pipeline
	cancels []context.CancelFunc
	joined  chan int        // a caller's index, at its first delta
	ended   []chan struct{} // closed when each caller's Stream returned
	wg      sync.WaitGroup

	mu      sync.Mutex
	streams []string // each caller's events, "meta:<tier> <text>… done"
	results []*Result
	errs    []error
}

func newStreamCrowd(t *testing.T, tier tiers.Tier, n int) *streamCrowd {
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{
		{Tier: tier, Model: true},
		{Tier: tiers.NewStatic("static", "sorry")},
	}})
	c := &streamCrowd{p: p, joined: make(chan int, n), streams: make([]string, n), results: make([]*Result, n), errs: make([]error, n)}
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		c.cancels = append(c.cancels, cancel)
		ended := make(chan struct{})
		c.ended = append(c.ended, ended)
		c.wg.Go(func() {
			defer close(ended)
			var got []string
			res, err := p.Stream(ctx, tiers.Query{Tenant: "acme", Question: "Are returns free?"}, func(e StreamEvent) error {
				switch e.Kind {
				case StreamMeta:
					got = append(got, "meta:"+e.Tier)
				case StreamDelta:
					if len(got) == 1 {
						c.joined <- i
					}
					got = append(got, e.Text)
				default:
					got = append(got, e.Kind.String())
				}
				return nil
			})
			c.mu.Lock()
			c.streams[i], c.results[i], c.errs[i] = strings.Join(got, "|"), res, err
			c.mu.Unlock()
		})
		if i == 0 {
			<-c.joined // caller 0 leads
		}
	}
	t.Cleanup(func() {
		for _, cancel := range c.cancels {
			cancel()
		}
		c.wg.Wait()
	})
	for range n - 1 { // every caller is in: each has the first delta
		<-c.joined
	}
	return c
}

const wholeStream = "meta:primary|Returns are free| within 30 days.|done"

// TestStreamFlightSharesOneUpstreamCall: 20 identical streams at once make
// one upstream call, and each caller receives the whole answer, those
// that came after its first text included.
func TestStreamFlightSharesOneUpstreamCall(t *testing.T) {
	g := &gatedStream{release: make(chan struct{})}
	c := newStreamCrowd(t, g, 20)
	close(g.release)
	c.wg.Wait()
	shared := 0
	for i := range 20 {
		if c.errs[i] != nil || c.streams[i] != wholeStream {
			t.Fatalf("caller %d: %q, %v; want %q", i, c.streams[i], c.errs[i], wholeStream)
		}
		if c.results[i].Text != "Returns are free within 30 days." {
			t.Fatalf("caller %d: result %q", i, c.results[i].Text)
		}
		if c.results[i].Shared {
			shared++
		}
	}
	if n := g.calls.Load(); n != 1 || shared != 19 {
		t.Fatalf("%d upstream calls, %d shared results; want 1, 19", n, shared)
	}
}

// TestStreamFlightCallersLeave: 19 of 20 identical streams going away
// (the one that started the run among them) leave the 20th its whole
// answer; when the last one goes too, the upstream call is cancelled
// before Stream returns.
func TestStreamFlightCallersLeave(t *testing.T) {
	t.Run("19 leave", func(t *testing.T) {
		g := &gatedStream{release: make(chan struct{})}
		c := newStreamCrowd(t, g, 20)
		for i := range 19 {
			c.cancels[i]()
		}
		for i := range 19 {
			<-c.ended[i]
		}
		close(g.release)
		c.wg.Wait()
		for i := range 19 {
			if !errors.Is(c.errs[i], context.Canceled) {
				t.Fatalf("caller %d: %v", i, c.errs[i])
			}
		}
		if c.errs[19] != nil || c.streams[19] != wholeStream || g.calls.Load() != 1 || g.cancelled.Load() != 0 {
			t.Fatalf("the 20th: %q, %v; %d upstream calls, %d cancelled", c.streams[19], c.errs[19], g.calls.Load(), g.cancelled.Load())
		}
		if !c.results[19].Shared {
			t.Fatal("the 20th led the flight; the leader should be caller 0, among those that left")
		}
	})
	t.Run("all leave", func(t *testing.T) {
		g := &gatedStream{release: make(chan struct{})}
		c := newStreamCrowd(t, g, 3)
		for _, cancel := range c.cancels {
			cancel()
		}
		c.wg.Wait()
		if g.calls.Load() != 1 || g.cancelled.Load() != 1 {
			t.Fatalf("%d upstream calls, %d cancelled; want 1, 1", g.calls.Load(), g.cancelled.Load())
		}
	})
}

// TestStreamFlightLeftTakesNoCallers: a flight every caller has left is
// being cancelled, so a caller arriving before leave drops it starts a
// flight of its own rather than join one whose run ends with
// context.Canceled.
func TestStreamFlightLeftTakesNoCallers(t *testing.T) {
	var g streamFlights
	f, leads := g.join("k", "acme", make(chan struct{}, 1))
	if !leads {
		t.Fatal("the first caller does not lead")
	}
	f.mu.Lock()
	f.subs-- // the last caller left; leave is yet to drop and cancel the flight
	f.mu.Unlock()
	nf, leads := g.join("k", "acme", make(chan struct{}, 1))
	if nf == f || !leads {
		t.Fatalf("joined the flight being cancelled (leads %v)", leads)
	}
	g.drop(f) // the old flight's leave
	if g.m["k"] != nf {
		t.Fatal("dropping the old flight dropped the new one")
	}
}
