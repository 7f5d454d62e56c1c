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

func TestIgnoredKindsDoNotTrip(t *testing.T) {
	for _, k := range []tiers.Kind{tiers.KindRateLimited, tiers.KindContextLength, tiers.KindContentFilter,
		tiers.KindBadRequest, tiers.KindMiss, tiers.KindNoDocs, tiers.KindUnavailable} {
		t.Run(string(k), func(t *testing.T) {
			p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: tier("t", tiers.SourcePrimary, fails(k))},
				{Tier: tier("s", tiers.SourceStatic, answers("x"))}}})
			for range 5 {
				ask(t, p, "q")
			}
			if st := p.Breakers().Get("tier/t").State(); st != breaker.StateClosed {
				t.Fatalf("state = %v", st)
			}
		})
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

func TestAskOddInput(t *testing.T) {
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: tiers.NewRetrieval(tiers.RetrievalConfig{})}, {Tier: tiers.NewStatic("", "")}}})
	for _, q := range []string{"", " \t\n", "\xff\xfe", strings.Repeat("问", 100000), "\x00"} {
		res, err := p.Ask(context.Background(), tiers.Query{Tenant: q, Question: q})
		if err != nil || res.Source != tiers.SourceStatic {
			t.Fatalf("Ask(%.10q): %v %v", q, res, err)
		}
	}
}

func TestBulkheadRejects(t *testing.T) {
	fn, entered, release := gate("slow")
	slow := tier("primary", tiers.SourcePrimary, fn)
	rec := &recorder{}
	p, _ := newTestPipeline(t, Options{Observer: rec, Tiers: []Stage{
		{Tier: slow, Bulkhead: &BulkheadConfig{MaxConcurrent: 1, MaxQueue: 1, QueueTimeout: 20 * time.Millisecond}},
		{Tier: tier("static", tiers.SourceStatic, answers("sorry"))}}})

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if res := ask(t, p, "first"); res.Text != "slow" {
			t.Errorf("first = %+v", res)
		}
	}()
	<-entered
	res := ask(t, p, "second") // queues, times out after 20ms
	close(release)
	wg.Wait()
	if got := outcomes(res); !slices.Equal(got, []string{"primary:bulkhead_full", "static:success"}) {
		t.Fatalf("attempts = %v", got)
	}
	if ev := rec.kinds(EventBulkheadRejected); len(ev) != 1 || ev[0].Tier != "primary" {
		t.Fatalf("bulkhead events = %+v", ev)
	}
	if st := p.Status().Bulkheads; len(st) != 1 || st[0].Rejected != 1 || st[0].InFlight != 0 || st[0].MaxConcurrent != 1 {
		t.Fatalf("status = %+v", st)
	}
}

func TestSingleflightSharesOneRun(t *testing.T) {
	release := make(chan struct{})
	primary := tier("primary", tiers.SourcePrimary, func(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
		<-release
		return tiers.Answer{Text: "one"}, nil
	})
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: primary}}})
	const n = 8
	var wg sync.WaitGroup
	results := make([]*Result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := []string{"Where is my order?", "  where IS my   order?  "}[i%2]
			results[i] = ask(t, p, q)
		}()
	}
	// Wait until every caller is inside the flight: one run holds it.
	for primary.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if c := primary.calls.Load(); c != 1 {
		t.Fatalf("primary called %d times, want 1", c)
	}
	shared := 0
	for _, r := range results {
		if r.Text != "one" {
			t.Fatalf("result %+v", r)
		}
		if r.Shared {
			shared++
		}
	}
	if shared != n-1 {
		t.Fatalf("%d shared results, want %d", shared, n-1)
	}
	// Another tenant does not share.
	if res, _ := p.Ask(context.Background(), tiers.Query{Tenant: "other", Question: "Where is my order?"}); res.Shared {
		t.Fatal("shared across tenants")
	}
}

func TestFlightKey(t *testing.T) {
	a := flightKey("t", "  Hello\t\tWORLD  ", false)
	if a != flightKey("t", "hello world", false) || a == flightKey("u", "hello world", false) ||
		a == flightKey("t", "hello world", true) || a == flightKey("t", "helloworld", false) {
		t.Fatalf("flight keys do not normalize as they should: %q", a)
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

func TestNewRejectsBadStages(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("no tiers accepted")
	}
	if _, err := New(Options{Tiers: []Stage{{}}}); err == nil {
		t.Fatal("nil tier accepted")
	}
	a := tier("a", tiers.SourcePrimary, answers("x"))
	if _, err := New(Options{Tiers: []Stage{{Tier: a}, {Tier: a}}}); err == nil {
		t.Fatal("duplicate name accepted")
	}
}

func TestClosedPipelineRefuses(t *testing.T) {
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: tier("s", tiers.SourceStatic, answers("x"))}}})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ask(context.Background(), tiers.Query{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v", err)
	}
	if err := p.ReloadKnowledgeBase(); !errors.Is(err, ErrNoKnowledgeBase) {
		t.Fatalf("reload: %v", err)
	}
}

type fakeKB struct{ version, reloads int }

func (k *fakeKB) Version() uint64 { return uint64(k.version) }
func (k *fakeKB) Reload() error   { k.reloads++; k.version++; return nil }

func TestReloadKnowledgeBase(t *testing.T) {
	kb := &fakeKB{version: 1}
	p, _ := newTestPipeline(t, Options{KnowledgeBase: kb, Tiers: []Stage{{Tier: tier("s", tiers.SourceStatic, answers("x"))}}})
	if err := p.ReloadKnowledgeBase(); err != nil || kb.reloads != 1 {
		t.Fatalf("reload: %v, %d reloads", err, kb.reloads)
	}
	if st := p.Status().KnowledgeBase; !st.Loaded || st.Version != 2 {
		t.Fatalf("status = %+v", st)
	}
}

// TestReloadDropsOldCacheEntries: after a reload the cache tiers hold no
// entry built on the old version.
func TestReloadDropsOldCacheEntries(t *testing.T) {
	kb := &fakeKB{version: 1}
	c := cache.New(cache.Config{})
	p, _ := newTestPipeline(t, Options{KnowledgeBase: kb, Tiers: []Stage{
		{Tier: tiers.NewSemanticCache(tiers.SemanticCacheConfig{Name: "cache", Cache: c,
			Embedder: cache.NewHashEmbedder(64), KBVersion: kb.Version})},
		{Tier: tier("primary", tiers.SourcePrimary, answers("policy")), Model: true},
	}})
	ask(t, p, "how do refunds work")
	if n := p.Status().Caches[0].Entries; n != 1 {
		t.Fatalf("%d entries after the first answer, want 1", n)
	}
	if err := p.ReloadKnowledgeBase(); err != nil {
		t.Fatal(err)
	}
	if n := p.Status().Caches[0].Entries; n != 0 {
		t.Errorf("%d entries of the old version kept after the reload", n)
	}
}

// TestReloadWhileCacheSkipped reloads the knowledge base while the
// primary answers a question whose cache tier was skipped (breaker open):
// the answer was built on the old version and must not be cached under
// the new one.
func TestReloadWhileCacheSkipped(t *testing.T) {
	kb := &fakeKB{version: 1}
	c := cache.New(cache.Config{})
	primary := tier("primary", tiers.SourcePrimary, func(context.Context, tiers.Query) (tiers.Answer, error) {
		if kb.version == 1 {
			_ = kb.Reload() // the reload lands while the answer is being built
		}
		return tiers.Answer{Text: "policy"}, nil
	})
	p, _ := newTestPipeline(t, Options{KnowledgeBase: kb, Tiers: []Stage{
		{Tier: tiers.NewSemanticCache(tiers.SemanticCacheConfig{Name: "cache", Cache: c,
			Embedder: cache.NewHashEmbedder(64), KBVersion: kb.Version})},
		{Tier: primary, Model: true},
	}})
	b, _ := p.Breakers().Lookup("tier/cache")
	b.Trip()
	if res := ask(t, p, "how do refunds work"); res.Source != tiers.SourcePrimary {
		t.Fatalf("first answer from %s, want primary", res.Source)
	}
	b.Reset()
	if res := ask(t, p, "how do refunds work"); res.Source != tiers.SourcePrimary {
		t.Errorf("answer built on version 1 served from the cache on version 2 (source %s)", res.Source)
	}
	if res := ask(t, p, "how do refunds work"); res.Source != tiers.SourceCache {
		t.Errorf("answer built on version 2 not cached (source %s)", res.Source)
	}
}

// TestFlightKeyNormalizes guards the singleflight key's normalization on
// both its ASCII fast path and the Unicode path.
func TestFlightKeyNormalizes(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"  How do I RETURN\tan item?\n", "how do i return an item?"},
		{"ÄPFEL\u00a0\u00a0Kaufen", "äpfel kaufen"},
		{"\u3000如何 开发票\u3000", "如何 开发票"},
		{"MiXeD Ünïcode\r\n text", "mixed ünïcode text"},
	} {
		if got, want := flightKey("t", tc.a, false), flightKey("t", tc.b, false); got != want {
			t.Errorf("flightKey(%q) = %q, want %q", tc.a, got, want)
		}
	}
	if flightKey("t", "a b", false) == flightKey("t", "ab", false) {
		t.Error("flightKey drops inner spaces")
	}
}
