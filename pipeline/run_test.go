package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/tiers"
)

func TestAskFallsThroughInOrder(t *testing.T) {
	primary := tier("primary", tiers.SourcePrimary, fails(tiers.KindServer))
	fallback := tier("fallback", tiers.SourceFallback, fails(tiers.KindContextLength))
	ret := tier("retrieval", tiers.SourceRetrieval, answers("docs"))
	static := tier("static", tiers.SourceStatic, answers("sorry"))
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: primary, Model: true}, {Tier: fallback, Model: true}, {Tier: ret}, {Tier: static}}})

	res := ask(t, p, "where is my order")
	if res.Text != "docs" || res.Source != tiers.SourceRetrieval || !res.Degraded || res.Shared {
		t.Fatalf("result = %+v", res)
	}
	want := []string{"primary:server_error", "fallback:context_length", "retrieval:success"}
	if got := outcomes(res); !slices.Equal(got, want) {
		t.Fatalf("attempts = %v, want %v", got, want)
	}
	if static.calls.Load() != 0 {
		t.Fatal("static tier called after an answer")
	}
}

func TestPrimaryAnswerIsNotDegraded(t *testing.T) {
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: tier("p", tiers.SourcePrimary, answers("hi"))}}})
	res := ask(t, p, "q")
	if res.Degraded || res.Source != tiers.SourcePrimary || res.Text != "hi" || res.Attempts[0].Outcome != OutcomeSuccess {
		t.Fatalf("result = %+v", res)
	}
}

func TestTierBreakerTripsAndProbes(t *testing.T) {
	primary := tier("primary", tiers.SourcePrimary, fails(tiers.KindTimeout))
	static := tier("static", tiers.SourceStatic, answers("sorry"))
	p, clk := newTestPipeline(t, Options{Tiers: []Stage{
		{Tier: primary, Model: true, Breaker: breaker.Config{FailureThreshold: 2, OpenDuration: 30 * time.Second}},
		{Tier: static}}})

	ask(t, p, "a")
	ask(t, p, "b")
	if st := p.Breakers().Get("tier/primary").State(); st != breaker.StateOpen {
		t.Fatalf("state after 2 failures = %v", st)
	}
	for range 5 {
		res := ask(t, p, "c")
		if got := outcomes(res); !slices.Equal(got, []string{"primary:breaker_open", "static:success"}) {
			t.Fatalf("attempts while open = %v", got)
		}
	}
	if n := primary.calls.Load(); n != 2 {
		t.Fatalf("primary called %d times while open, want 2", n)
	}
	clk.Advance(30 * time.Second)
	primary.fn = answers("back")
	res := ask(t, p, "d")
	if res.Text != "back" || primary.calls.Load() != 3 {
		t.Fatalf("probe: %+v calls=%d", res, primary.calls.Load())
	}
	if st := p.Breakers().Get("tier/primary").State(); st != breaker.StateClosed {
		t.Fatalf("state after a good probe = %v", st)
	}
}

func TestBudgetLeavesLaterTiersTheirTime(t *testing.T) {
	primary := tier("primary", tiers.SourcePrimary, hangs)
	fallback := tier("fallback", tiers.SourceFallback, hangs)
	ret := tier("retrieval", tiers.SourceRetrieval, answers("docs"))
	static := tier("static", tiers.SourceStatic, answers("sorry"))
	p, _ := newTestPipeline(t, Options{RequestTimeout: 600 * time.Millisecond, Tiers: []Stage{
		{Tier: primary, Model: true, Timeout: 30 * time.Second},
		{Tier: fallback, Model: true, Timeout: 150 * time.Millisecond},
		{Tier: ret, Timeout: 50 * time.Millisecond},
		{Tier: static}}})

	start := time.Now()
	res := ask(t, p, "q")
	took := time.Since(start)
	if res.Source != tiers.SourceRetrieval {
		t.Fatalf("source = %s (%v)", res.Source, outcomes(res))
	}
	if took > 600*time.Millisecond {
		t.Fatalf("took %v, past the 600ms budget", took)
	}
	// primary: 600ms - fallback's 150ms - retrieval's 50ms.
	if b := primary.given()[0]; b > 400*time.Millisecond || b < 300*time.Millisecond {
		t.Fatalf("primary was given %v, want about 400ms", b)
	}
	if b := fallback.given()[0]; b > 150*time.Millisecond || b < 120*time.Millisecond {
		t.Fatalf("fallback was given %v, want about 150ms", b)
	}
	if b := ret.given()[0]; b < 40*time.Millisecond {
		t.Fatalf("retrieval was given %v, want about 50ms", b)
	}
	if got := outcomes(res); !slices.Equal(got, []string{"primary:timeout", "fallback:timeout", "retrieval:success"}) {
		t.Fatalf("attempts = %v", got)
	}
}

func TestCallerDeadlineShortensBudget(t *testing.T) {
	primary := tier("primary", tiers.SourcePrimary, hangs)
	static := tier("static", tiers.SourceStatic, answers("sorry"))
	p, _ := newTestPipeline(t, Options{RequestTimeout: time.Minute, Tiers: []Stage{{Tier: primary, Model: true}, {Tier: static}}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := p.Ask(ctx, tiers.Query{Question: "q"})
	if took := time.Since(start); took > 150*time.Millisecond {
		t.Fatalf("took %v with a 100ms caller deadline", took)
	}
	// The static tier needs no time: it still answers at the deadline.
	if err == nil && res.Source != tiers.SourceStatic || err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	if err := p.Close(); err != nil { // waits for the run
		t.Fatal(err)
	}
	if g := primary.given(); len(g) != 1 || g[0] > 100*time.Millisecond {
		t.Fatalf("primary was given %v", g)
	}
}

func TestCallerCancelStopsAndIsIgnored(t *testing.T) {
	started := make(chan struct{})
	primary := tier("primary", tiers.SourcePrimary, func(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
		close(started)
		return hangs(ctx, q)
	})
	static := tier("static", tiers.SourceStatic, answers("sorry"))
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: primary, Breaker: breaker.Config{FailureThreshold: 1}}, {Tier: static}}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res, err := p.Ask(ctx, tiers.Query{Question: "q"})
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("res=%v err=%v", res, err)
	}
	if err := p.Close(); err != nil { // waits for the run to end
		t.Fatal(err)
	}
	if static.calls.Load() != 0 {
		t.Fatal("run went on after the caller left")
	}
	if st := p.Breakers().Get("tier/primary").State(); st != breaker.StateClosed {
		t.Fatalf("a cancel hurt the breaker: %v", st)
	}
}

func TestExhaustedWithoutStatic(t *testing.T) {
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: tier("a", tiers.SourcePrimary, fails(tiers.KindServer))},
		{Tier: tier("b", tiers.SourceRetrieval, fails(tiers.KindNoDocs))}}})
	res, err := p.Ask(context.Background(), tiers.Query{Question: "q"})
	if !errors.Is(err, ErrExhausted) || res == nil || len(res.Attempts) != 2 || res.Attempts[1].Outcome != "no_docs" {
		t.Fatalf("res=%+v err=%v", res, err)
	}
}

func TestPanickingTierFallsThrough(t *testing.T) {
	bad := tier("bad", tiers.SourcePrimary, func(context.Context, tiers.Query) (tiers.Answer, error) { panic("boom") })
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: bad}, {Tier: tier("s", tiers.SourceStatic, answers("ok"))}}})
	res := ask(t, p, "q")
	if res.Text != "ok" || res.Attempts[0].Outcome != "other" || !strings.Contains(res.Attempts[0].Error, "boom") {
		t.Fatalf("result = %+v", res)
	}
}

type rememberingTier struct {
	*fakeTier
	mu   sync.Mutex
	seen []tiers.Answer
}

func (r *rememberingTier) Remember(_ context.Context, _ tiers.Query, a tiers.Answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, a)
}

func (r *rememberingTier) Len() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.seen) }

func TestCacheRemembersFinalAnswer(t *testing.T) {
	c := &rememberingTier{fakeTier: tier("cache", tiers.SourceCache, fails(tiers.KindMiss))}
	interrupted := false
	primary := tier("primary", tiers.SourcePrimary, func(context.Context, tiers.Query) (tiers.Answer, error) {
		return tiers.Answer{Text: "fresh", Model: "m", Interrupted: interrupted}, nil
	})
	rec := &recorder{}
	p, _ := newTestPipeline(t, Options{Observer: rec, Tiers: []Stage{{Tier: c}, {Tier: primary, Model: true}}})
	ask(t, p, "q")
	if len(c.seen) != 1 || c.seen[0].Text != "fresh" || c.seen[0].Source != tiers.SourcePrimary {
		t.Fatalf("remembered %+v", c.seen)
	}
	interrupted = true
	ask(t, p, "q2")
	if len(c.seen) != 1 {
		t.Fatal("an interrupted answer was remembered")
	}
	if ev := rec.kinds(EventCache); len(ev) != 2 || ev[0].Reason != "miss" {
		t.Fatalf("cache events = %+v", ev)
	}
	if st := p.Status().Caches; len(st) != 1 || st[0].Entries != 1 || st[0].Tier != "cache" {
		t.Fatalf("cache status = %+v", st)
	}
}

// TestStaticTierIgnoresItsBreaker: a static tier is the answer of last
// resort, so a pipeline ending in one never returns ErrExhausted, even
// when the static tier's breaker was tripped through Breakers() (or by
// another instance sharing the breaker store). A model tier's tripped
// breaker still takes it out of the chain.
func TestStaticTierIgnoresItsBreaker(t *testing.T) {
	primary := tier("primary", tiers.SourcePrimary, fails(tiers.KindServer))
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{
		{Tier: primary, Model: true},
		{Tier: tiers.NewStatic("static", "Sorry, try later.")},
	}})
	for _, name := range []string{"tier/primary", "tier/static"} {
		b, ok := p.Breakers().Lookup(name)
		if !ok {
			t.Fatalf("no breaker %s", name)
		}
		b.Trip()
	}
	res, err := p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: "anything?"})
	if err != nil {
		t.Fatalf("Ask with tier/static tripped: %v, want the static answer", err)
	}
	if res.Source != tiers.SourceStatic || res.Text != "Sorry, try later." {
		t.Errorf("answer %q from %s, want the static message", res.Text, res.Source)
	}
	if n := primary.calls.Load(); n != 0 {
		t.Errorf("primary called %d times with its breaker open, want 0", n)
	}
	want := []string{outcomeBreakerOpen, OutcomeSuccess}
	if len(res.Attempts) != len(want) {
		t.Fatalf("attempts %+v, want outcomes %v", res.Attempts, want)
	}
	for i, a := range res.Attempts {
		if a.Outcome != want[i] {
			t.Errorf("attempt %d (%s): outcome %s, want %s", i, a.Tier, a.Outcome, want[i])
		}
	}
}

// TestStaticTierHasNoReserve: a tier whose source is static, whatever its
// type, answers at once: the tiers before it keep back no time for it.
func TestStaticTierHasNoReserve(t *testing.T) {
	primary := tier("primary", tiers.SourcePrimary, answers("ok"))
	static := tier("static", tiers.SourceStatic, answers("sorry"))
	p, _ := newTestPipeline(t, Options{RequestTimeout: 10 * time.Second, Tiers: []Stage{{Tier: primary}, {Tier: static}}})
	ask(t, p, "q")
	if g := primary.given()[0]; g < 9900*time.Millisecond {
		t.Errorf("primary was given %v of a 10s budget with only a static tier after it", g)
	}
}

func TestObserverEvents(t *testing.T) {
	rec := &recorder{}
	primary := tier("primary", tiers.SourcePrimary, fails(tiers.KindServer))
	p, clk := newTestPipeline(t, Options{Observer: rec, Tiers: []Stage{
		{Tier: primary, Model: true, Breaker: breaker.Config{FailureThreshold: 1}},
		{Tier: tier("static", tiers.SourceStatic, answers("sorry"))}}})
	res := ask(t, p, "q")

	att := rec.kinds(EventAttempt)
	if len(att) != 2 || att[0].Attempt.Outcome != "server_error" || att[0].Tier != "primary" || att[0].Tenant != "acme" ||
		att[1].Attempt.Outcome != OutcomeSuccess || !att[0].Time.Equal(clk.Now()) {
		t.Fatalf("attempt events = %+v", att)
	}
	ans := rec.kinds(EventAnswered)
	if len(ans) != 1 || ans[0].Result != res || ans[0].Tier != "static" {
		t.Fatalf("answered events = %+v", ans)
	}
	br := rec.kinds(EventBreaker)
	if len(br) != 1 || br[0].Breaker != "tier/primary" || br[0].From != breaker.StateClosed || br[0].To != breaker.StateOpen {
		t.Fatalf("breaker events = %+v", br)
	}
	var names []string
	for _, s := range p.Status().Breakers {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"tier/primary", "tier/static"}) {
		t.Fatalf("status breakers = %v", names)
	}
}

// TestRememberKeepsToTheBudget: writing an answer back to the semantic
// cache is part of the question and keeps to its budget. Here the cache
// tier was skipped (its breaker is open), so the write-back is the first
// to embed the question, and the embedding service hangs: Ask must still
// return within the request timeout.
func TestRememberKeepsToTheBudget(t *testing.T) {
	emb := &hangingEmbedder{}
	p, _ := newTestPipeline(t, Options{
		RequestTimeout: 300 * time.Millisecond,
		Embedder:       emb,
		EmbedderModel:  "embed",
		Tiers: []Stage{
			{Tier: tiers.NewCache(tiers.CacheConfig{Name: "cache", Cache: cache.New(cache.Config{}), Embedder: emb}),
				Timeout: 20 * time.Millisecond, Breaker: breaker.Config{FailureThreshold: 1, OpenDuration: time.Minute}},
			{Tier: tier("primary", tiers.SourcePrimary, answers("ok")), Model: true},
		},
	})
	ask(t, p, "first") // the embedding times out in the cache tier: tier/cache opens
	if b, _ := p.Breakers().Lookup("tier/cache"); b.State() != breaker.StateOpen {
		t.Fatalf("tier/cache = %v, want open", b.State())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		res  *Result
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		res, err = p.Ask(ctx, tiers.Query{Tenant: "acme", Question: "second"})
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		cancel()
		<-done
		t.Fatal("Ask did not return within 3s with a request timeout of 300ms: the cache write-back waited on the hung embedder")
	}
	if err != nil || res.Source != tiers.SourcePrimary {
		t.Fatalf("Ask = %v, %v; want the primary's answer", res, err)
	}
}

// TestAttemptSkipped: the skip outcomes are the ones of a tier or model
// not called; success and the failure kinds are calls.
func TestAttemptSkipped(t *testing.T) {
	for outcome, want := range map[string]bool{
		"breaker_open": true, "bulkhead_full": true, "cooling_down": true, "over_quota": true, "budget_exhausted": true,
		OutcomeSuccess: false, string(tiers.KindTimeout): false, string(tiers.KindCanceled): false, string(tiers.KindMiss): false,
	} {
		if got := (Attempt{Outcome: outcome}).Skipped(); got != want {
			t.Errorf("Skipped() of %q = %v, want %v", outcome, got, want)
		}
	}
}
