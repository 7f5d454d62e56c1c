package pipeline

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// slowTier is a streaming tier that sends its first text after first and
// the rest of it after rest, or fails when its context ends first; it
// counts its calls and the calls cancelled.
type slowTier struct {
	name        string
	source      tiers.Source
	first, rest time.Duration
	calls       atomic.Int64
	cancelled   atomic.Int64
}

func (s *slowTier) Name() string         { return s.name }
func (s *slowTier) Source() tiers.Source { return s.source }

func (s *slowTier) Answer(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
	return s.AnswerStream(ctx, q, tiers.StreamRequest{})
}

func (s *slowTier) AnswerStream(ctx context.Context, _ tiers.Query, r tiers.StreamRequest) (tiers.Answer, error) {
	s.calls.Add(1)
	for i, d := range []time.Duration{s.first, s.rest} {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			s.cancelled.Add(1)
			return tiers.Answer{}, &tiers.Error{Kind: tiers.KindOf(ctx.Err()), Tier: s.name, Err: ctx.Err()}
		}
		if r.Emit != nil {
			if err := r.Emit(tiers.Delta{Text: s.name + [2]string{" part one.", " part two."}[i]}); err != nil {
				s.cancelled.Add(1)
				return tiers.Answer{}, &tiers.Error{Kind: tiers.KindCanceled, Tier: s.name, Err: err}
			}
		}
	}
	return tiers.Answer{Text: s.name + " part one. part two."}, nil
}

// hedgeRig is a pipeline of a hedged primary, a fallback and a static
// tier.
type hedgeRig struct {
	p                 *Pipeline
	primary, fallback *slowTier
	rec               *recorder
}

func newHedgeRig(t *testing.T, primary, fallback *slowTier, hedgeAfter time.Duration, br breaker.Config) *hedgeRig {
	t.Helper()
	primary.name, primary.source = "primary", tiers.SourcePrimary
	fallback.name, fallback.source = "fallback", tiers.SourceFallback
	rec := &recorder{}
	p, _ := newTestPipeline(t, Options{RequestTimeout: time.Minute, Observer: rec, Tiers: []Stage{
		{Tier: primary, Model: true, Timeout: 15 * time.Second, Breaker: br, HedgeAfter: hedgeAfter},
		{Tier: fallback, Model: true, Timeout: 15 * time.Second},
		{Tier: tiers.NewStatic("static", "sorry")},
	}})
	return &hedgeRig{p: p, primary: primary, fallback: fallback, rec: rec}
}

// hedges returns the Reason ("true": the hedge won) of each EventHedge.
func (h *hedgeRig) hedges() string {
	var out []string
	for _, e := range h.rec.kinds(EventHedge) {
		out = append(out, e.Tier+":"+e.Reason)
	}
	return strings.Join(out, " ")
}

func TestHedge(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		hedgeAfter             time.Duration
		primary, fallback      time.Duration // time to answer
		source                 tiers.Source
		took                   time.Duration
		attempts, hedges       string
		fallbackCalls, dropped int64 // calls of the fallback; calls cancelled, either tier
	}{
		{name: "fires after hedge_after, the hedge wins", hedgeAfter: 2500 * time.Millisecond,
			primary: 15 * time.Second, fallback: 400 * time.Millisecond, source: tiers.SourceFallback,
			took: 2900 * time.Millisecond, attempts: "fallback:success primary:hedged", hedges: "primary:true",
			fallbackCalls: 1, dropped: 1},
		{name: "the hedged call wins the race", hedgeAfter: 2 * time.Second,
			primary: 3 * time.Second, fallback: 5 * time.Second, source: tiers.SourcePrimary,
			took: 3 * time.Second, attempts: "primary:success fallback:hedged", hedges: "primary:false",
			fallbackCalls: 1, dropped: 1},
		{name: "an answer before hedge_after is not hedged", hedgeAfter: 2 * time.Second,
			primary: 1900 * time.Millisecond, fallback: 100 * time.Millisecond, source: tiers.SourcePrimary,
			took: 1900 * time.Millisecond, attempts: "primary:success"},
		{name: "off by default", primary: 10 * time.Second, fallback: 100 * time.Millisecond,
			source: tiers.SourcePrimary, took: 10 * time.Second, attempts: "primary:success"},
		{name: "the hedged call's timeout leaves the hedge running", hedgeAfter: 14 * time.Second,
			primary: time.Hour, fallback: 3 * time.Second, source: tiers.SourceFallback,
			took: 17 * time.Second, attempts: "primary:timeout fallback:success", hedges: "primary:true",
			fallbackCalls: 1, dropped: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHedgeRig(t, &slowTier{first: tc.primary}, &slowTier{first: tc.fallback}, tc.hedgeAfter, breaker.Config{})
				res := ask(t, h.p, "where is my parcel")
				if res.Source != tc.source || res.Duration != tc.took {
					t.Fatalf("answered by %s after %v, want %s after %v", res.Source, res.Duration, tc.source, tc.took)
				}
				if got := strings.Join(outcomes(res), " "); got != tc.attempts {
					t.Fatalf("attempts %q, want %q", got, tc.attempts)
				}
				if got := h.hedges(); got != tc.hedges {
					t.Fatalf("hedge events %q, want %q", got, tc.hedges)
				}
				dropped := h.primary.cancelled.Load() + h.fallback.cancelled.Load()
				if h.fallback.calls.Load() != tc.fallbackCalls || dropped != tc.dropped {
					t.Fatalf("%d fallback calls, %d cancelled; want %d, %d", h.fallback.calls.Load(), dropped, tc.fallbackCalls, tc.dropped)
				}
			})
		})
	}
}

// TestHedgeLoserCountsSlowOrNothing: a call cancelled because its hedge
// won is slow to its breaker if it ran past slow_call_duration, and
// otherwise not counted at all.
func TestHedgeLoserCountsSlowOrNothing(t *testing.T) {
	for _, tc := range []struct {
		slowAfter   time.Duration
		calls, slow int
	}{
		{slowAfter: 2 * time.Second, calls: 1, slow: 1},
		{slowAfter: 5 * time.Second, calls: 0, slow: 0},
	} {
		synctest.Test(t, func(t *testing.T) {
			br := breaker.Config{SlowCallDuration: tc.slowAfter, SlowCallRate: 0.9}
			h := newHedgeRig(t, &slowTier{first: time.Hour}, &slowTier{first: 500 * time.Millisecond}, 2500*time.Millisecond, br)
			if res := ask(t, h.p, "q"); res.Source != tiers.SourceFallback {
				t.Fatalf("answered by %s", res.Source)
			}
			b, _ := h.p.Breakers().Lookup("tier/primary")
			if s := b.Snapshot(); s.Calls != tc.calls || s.SlowCalls != tc.slow || s.Failures != 0 {
				t.Fatalf("slow_call_duration %v: breaker counts %d calls, %d slow, %d failures; want %d, %d, 0",
					tc.slowAfter, s.Calls, s.SlowCalls, s.Failures, tc.calls, tc.slow)
			}
		})
	}
}

// TestHedgeBudgetCapsHedges: on a healthy but slow day (every call would
// be hedged) the hedges stay within hedge_budget of the calls over the
// breaker's window.
func TestHedgeBudgetCapsHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHedgeRig(t, &slowTier{first: 3 * time.Second}, &slowTier{first: 5 * time.Second}, 2*time.Second, breaker.Config{Window: 20})
		const questions = 40
		for range questions {
			ask(t, h.p, "q")
		}
		// One hedge while the window of 20 fills (the floor of one per
		// window), two (0.1 x 20) once it is full, none more until they
		// leave it 20 calls later.
		if n := h.fallback.calls.Load(); n != 3 {
			t.Fatalf("%d hedges over %d slow calls, want 3 (hedge_budget 0.1)", n, questions)
		}
		if got := strings.Count(h.hedges(), "primary:false"); got != 3 {
			t.Fatalf("hedge events %q", h.hedges())
		}
	})
}

// TestHedgeBudgetOpensInTrouble: with a failure or a slow call in the
// breaker's window, or the breaker open, every call may be hedged.
func TestHedgeBudgetOpensInTrouble(t *testing.T) {
	b := breaker.New("tier/x", breaker.Config{FailureThreshold: -1, MinimumCalls: 100, Window: 100})
	hb := newHedgeBudget(0, b.Config())
	for range 50 {
		hb.record()
	}
	if !hb.take(b) {
		t.Fatal("refused the first hedge of 50 calls")
	}
	for range 5 {
		hb.take(b)
	}
	if hb.take(b) {
		t.Fatal("a 7th hedge of 50 healthy calls passed the budget of 0.1")
	}
	p, _ := b.Allow()
	p.Done(breaker.Failure)
	for i := range 20 {
		if !hb.take(b) {
			t.Fatalf("hedge %d refused with a failure in the window", i)
		}
	}
	b.Trip()
	if !hb.take(b) {
		t.Fatal("hedge refused with the breaker open")
	}
}

// TestHedgeStream: a stream that sent no text after hedge_after is hedged
// and the first text wins: the receiver sees the winner's stream only.
// One that sent text before it is never hedged, however long it takes.
func TestHedgeStream(t *testing.T) {
	for _, tc := range []struct {
		name            string
		primary         *slowTier
		summary, source string
		fallbackCalls   int64
	}{
		{name: "no first token: hedged", primary: &slowTier{first: time.Hour},
			summary: "meta:fallback fallback part one. fallback part two. done", source: "fallback", fallbackCalls: 1},
		{name: "first token in time: not hedged", primary: &slowTier{first: time.Second, rest: 10 * time.Second},
			summary: "meta:primary primary part one. primary part two. done", source: "primary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHedgeRig(t, tc.primary, &slowTier{first: 300 * time.Millisecond, rest: time.Second}, 2*time.Second, breaker.Config{})
				var got []string
				res, err := h.p.Stream(context.Background(), tiers.Query{Tenant: "t", Question: "q"}, func(e StreamEvent) error {
					switch e.Kind {
					case StreamMeta:
						got = append(got, "meta:"+e.Tier)
					case StreamDelta:
						got = append(got, e.Text)
					default:
						got = append(got, e.Kind.String())
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if s := strings.Join(got, " "); s != tc.summary {
					t.Fatalf("events %q, want %q", s, tc.summary)
				}
				if string(res.Source) != tc.source || h.fallback.calls.Load() != tc.fallbackCalls {
					t.Fatalf("source %s, %d fallback calls", res.Source, h.fallback.calls.Load())
				}
			})
		})
	}
}

// TestHedgeLosingProbeReopens: a half-open probe that lost its hedge past
// slow_call_duration re-opens the breaker; a slow success would have
// closed it though the model never answered.
func TestHedgeLosingProbeReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br := breaker.Config{SlowCallDuration: 2 * time.Second, SlowCallRate: 0.9, OpenDuration: 10 * time.Second}
		primary := &slowTier{first: time.Hour}
		h := newHedgeRig(t, primary, &slowTier{first: 500 * time.Millisecond}, 2500*time.Millisecond, br)
		b, _ := h.p.Breakers().Lookup("tier/primary")
		b.Trip()
		h.p.clock.(interface{ Advance(time.Duration) time.Time }).Advance(11 * time.Second)
		if s := b.State(); s != breaker.StateHalfOpen {
			t.Fatalf("state %v, want half-open", s)
		}
		if res := ask(t, h.p, "q"); res.Source != tiers.SourceFallback || primary.calls.Load() != 1 {
			t.Fatalf("answered by %s, %d primary calls", res.Source, primary.calls.Load())
		}
		if s := b.State(); s != breaker.StateOpen {
			t.Fatalf("state %v after the probe lost its hedge at 3s, want open", s)
		}
	})
}

// failsAfter is a tier function that fails with kind after d, or when its
// context ends first.
func failsAfter(d time.Duration, kind tiers.Kind) func(context.Context, tiers.Query) (tiers.Answer, error) {
	return func(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
		select {
		case <-time.After(d):
			return fails(kind)(ctx, q)
		case <-ctx.Done():
			return hangs(ctx, q)
		}
	}
}

// TestHedgeThenDescend: when neither call of a hedge answers, the stages
// after the hedged one are asked in order, the hedging one only if its
// call was skipped.
func TestHedgeThenDescend(t *testing.T) {
	for _, tc := range []struct {
		name          string
		fallbackShut  bool // the fallback's breaker is open when the hedge starts, half-open when the primary fails
		source        tiers.Source
		fallbackCalls int64
		hedges        int // EventHedge: a skipped hedge made no second call
	}{
		{name: "the stage between is asked", source: tiers.SourceRetrieval, fallbackCalls: 1, hedges: 1},
		{name: "a skipped hedge leaves the hedging stage to be asked", fallbackShut: true,
			source: tiers.SourceFallback, fallbackCalls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var clk interface{ Advance(time.Duration) time.Time }
				primary := tier("primary", tiers.SourcePrimary, func(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
					a, err := failsAfter(2*time.Second, tiers.KindServer)(ctx, q)
					clk.Advance(time.Minute) // the fallback's breaker half-opens
					return a, err
				})
				retrieval := tier("retrieval", tiers.SourceRetrieval, fails(tiers.KindNoDocs))
				if !tc.fallbackShut {
					retrieval.fn = answers("see the returns page")
				}
				fallback := tier("fallback", tiers.SourceFallback, answers("returns are free"))
				if !tc.fallbackShut {
					fallback.fn = fails(tiers.KindServer)
				}
				rec := &recorder{}
				p, mc := newTestPipeline(t, Options{RequestTimeout: time.Minute, Observer: rec, Tiers: []Stage{
					{Tier: primary, Model: true, Timeout: 15 * time.Second, HedgeAfter: time.Second},
					{Tier: retrieval},
					{Tier: fallback, Model: true, Timeout: 15 * time.Second, Breaker: breaker.Config{OpenDuration: 10 * time.Second}},
					{Tier: tiers.NewStatic("static", "sorry")},
				}})
				clk = mc
				if tc.fallbackShut {
					b, _ := p.Breakers().Lookup("tier/fallback")
					b.Trip()
				}
				res := ask(t, p, "are returns free")
				if res.Source != tc.source || fallback.calls.Load() != tc.fallbackCalls || retrieval.calls.Load() != 1 {
					t.Fatalf("answered by %s (%v); %d fallback calls, %d retrieval calls; want %s, %d, 1",
						res.Source, outcomes(res), fallback.calls.Load(), retrieval.calls.Load(), tc.source, tc.fallbackCalls)
				}
				if n := len(rec.kinds(EventHedge)); n != tc.hedges {
					t.Fatalf("%d hedge events, want %d", n, tc.hedges)
				}
			})
		})
	}
}

// panicky is an Observer that panics at an attempt of tier.
type panicky struct{ tier string }

func (p panicky) Observe(e Event) {
	if e.Kind == EventAttempt && e.Tier == p.tier {
		panic("observer exploded")
	}
}

// TestHedgePanicIsAnError: a panic on a hedge's call, outside the tier,
// ends the question with an error holding it, as on the question's own
// goroutine, instead of taking the process down.
func TestHedgePanicIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		primary := &slowTier{name: "primary", source: tiers.SourcePrimary, first: time.Hour}
		fallback := &slowTier{name: "fallback", source: tiers.SourceFallback, first: 300 * time.Millisecond}
		p, _ := newTestPipeline(t, Options{RequestTimeout: time.Minute, Observer: panicky{tier: "fallback"}, Tiers: []Stage{
			{Tier: primary, Model: true, Timeout: 15 * time.Second, HedgeAfter: time.Second},
			{Tier: fallback, Model: true, Timeout: 15 * time.Second},
			{Tier: tiers.NewStatic("static", "sorry")},
		}})
		res, err := p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: "q"})
		if err == nil || !strings.Contains(err.Error(), "observer exploded") || res != nil {
			t.Fatalf("Ask: %v, %v; want the panic as its error", res, err)
		}
		if !strings.Contains(err.Error(), "panicky.Observe") {
			t.Fatalf("the error lacks the stack of the hedge call that panicked: %v", err)
		}
		if primary.cancelled.Load() != 1 {
			t.Fatalf("%d primary calls cancelled, want 1: the hedged call ends with the question", primary.cancelled.Load())
		}
	})
}
