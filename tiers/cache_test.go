package tiers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/retrieval"
)

// cacheClock is the manual clock of the cache tiers' tests.
type cacheClock = clock.Manual

// countingEmbedder counts Embed calls and can be made to fail.
type countingEmbedder struct {
	inner cache.Embedder
	calls atomic.Int32
	fail  atomic.Bool
}

var errEmbedDown = errors.New("embedding service down")

func (e *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	if e.fail.Load() {
		return nil, errEmbedDown
	}
	return e.inner.Embed(ctx, texts)
}

// cacheRig is a semantic cache tier and a stale tier over one cache.
type cacheRig struct {
	t     *testing.T
	clock *cacheClock
	emb   *countingEmbedder
	c     *cache.Cache
	kb    atomic.Uint64
	sem   *Cache
	stale *Cache
}

func newCacheRig(t *testing.T, storeFrom []Source) *cacheRig {
	r := &cacheRig{
		t:     t,
		clock: clock.NewManual(time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)),
		emb:   &countingEmbedder{inner: cache.NewHashEmbedder(0)},
	}
	r.c = cache.New(cache.Config{TTL: time.Hour, Jitter: -1, Grace: 10 * time.Minute, Clock: r.clock})
	r.sem = NewCache(CacheConfig{Cache: r.c, Embedder: r.emb, StoreFrom: storeFrom, KBVersion: r.kb.Load})
	r.stale = NewCache(CacheConfig{Stale: true, Cache: r.c, Embedder: r.emb, KBVersion: r.kb.Load})
	return r
}

// run plays a question through the cache tier and, on a miss, "answers" it
// with a and offers the answer to Remember, as the pipeline does.
func (r *cacheRig) run(tenant, question string, a Answer) (Answer, error) {
	r.t.Helper()
	q := Query{Tenant: tenant, Question: question, Memo: &Memo{}}
	got, err := r.sem.Answer(context.Background(), q)
	if err == nil {
		return got, nil
	}
	if KindOf(err) != KindMiss {
		return Answer{}, err
	}
	r.sem.Remember(context.Background(), q, a)
	return Answer{}, err
}

func (r *cacheRig) ask(tenant, question string) (Answer, error) {
	return r.sem.Answer(context.Background(), Query{Tenant: tenant, Question: question, Memo: &Memo{}})
}

func primary(text string) Answer {
	return Answer{Text: text, Source: SourcePrimary, Model: "qwen3-max",
		Docs: []retrieval.Doc{{ID: "returns-policy", Title: "Returns", Text: "long text", Score: 3}}}
}

func TestSemanticCacheHitAfterRemember(t *testing.T) {
	r := newCacheRig(t, nil)
	if _, err := r.run("acme", "How do I return an item?", primary("Open Orders, choose Return.")); KindOf(err) != KindMiss {
		t.Fatalf("first ask: err = %v, want KindMiss", err)
	}
	got, err := r.ask("acme", "how can I return an item")
	if err != nil {
		t.Fatalf("second ask: %v", err)
	}
	want := Answer{Text: "Open Orders, choose Return.", Source: SourceCache, Model: "qwen3-max",
		Docs: []retrieval.Doc{{ID: "returns-policy", Title: "Returns"}}}
	if got.Text != want.Text || got.Source != want.Source || got.Model != want.Model ||
		len(got.Docs) != 1 || got.Docs[0].ID != want.Docs[0].ID || got.Docs[0].Title != want.Docs[0].Title {
		t.Errorf("hit = %+v, want %+v", got, want)
	}
	if r.sem.Source() != SourceCache || r.sem.Name() != "cache" || r.sem.Len() != 1 {
		t.Errorf("Source %q Name %q Len %d", r.sem.Source(), r.sem.Name(), r.sem.Len())
	}
}

func TestSemanticCacheTenantIsolation(t *testing.T) {
	r := newCacheRig(t, nil)
	r.run("acme", "如何开发票", primary("acme: 在订单页申请发票"))
	if _, err := r.ask("globex", "如何开发票"); KindOf(err) != KindMiss {
		t.Errorf("another tenant: err = %v, want KindMiss", err)
	}
	if a, err := r.ask("acme", "怎么开发票"); err != nil || a.Text != "acme: 在订单页申请发票" {
		t.Errorf("same tenant: %+v, %v", a, err)
	}
}

func TestSemanticCacheStoreFrom(t *testing.T) {
	sources := []Source{SourcePrimary, SourceFallback, SourceRetrieval, SourceStatic, SourceCache, SourceStaleCache}
	for _, tc := range []struct {
		storeFrom []Source
		stored    []Source
	}{
		{nil, []Source{SourcePrimary}},
		{[]Source{SourcePrimary, SourceFallback}, []Source{SourcePrimary, SourceFallback}},
		{[]Source{}, nil},
		{[]Source{SourceCache, SourceStaleCache}, nil}, // never re-store cache answers
	} {
		t.Run(fmt.Sprint(tc.storeFrom), func(t *testing.T) {
			r := newCacheRig(t, tc.storeFrom)
			for i, src := range sources {
				q := fmt.Sprintf("question about topic %c", 'a'+i)
				r.run("t", q, Answer{Text: "answer " + q, Source: src})
				_, err := r.ask("t", q)
				want := false
				for _, s := range tc.stored {
					want = want || s == src
				}
				if got := err == nil; got != want {
					t.Errorf("answer from %s stored = %v, want %v", src, got, want)
				}
			}
		})
	}
}

func TestSemanticCacheNeverStoresPartialAnswers(t *testing.T) {
	r := newCacheRig(t, nil)
	interrupted := primary("The return window is")
	interrupted.Interrupted = true
	r.run("t", "what is the return window", interrupted)
	r.run("t", "how long is delivery", Answer{Text: "  \n", Source: SourcePrimary})
	if n := r.c.Size(); n != 0 {
		t.Errorf("%d entries stored from an interrupted or empty answer, want 0", n)
	}
}

func TestSemanticCacheKBVersion(t *testing.T) {
	r := newCacheRig(t, nil)
	r.kb.Store(1)
	// The knowledge base is reloaded while the question is being answered:
	// the answer was built on version 1 and must not be stored as version 2.
	q := Query{Tenant: "t", Question: "how do I return an item", Memo: &Memo{}}
	if _, err := r.sem.Answer(context.Background(), q); KindOf(err) != KindMiss {
		t.Fatal(err)
	}
	r.kb.Store(2)
	r.sem.Remember(context.Background(), q, primary("old policy"))
	if _, err := r.ask("t", "how do I return an item"); KindOf(err) != KindMiss {
		t.Errorf("answer built on a reloaded knowledge base was stored: %v", err)
	}
	// Built and stored on version 2; a reload to 3 hides it.
	r.run("t", "how do I return an item", primary("new policy"))
	if a, err := r.ask("t", "how do I return an item"); err != nil || a.Text != "new policy" {
		t.Fatalf("ask on version 2 = %+v, %v", a, err)
	}
	r.kb.Store(3)
	if _, err := r.ask("t", "how do I return an item"); KindOf(err) != KindMiss {
		t.Errorf("entry of version 2 served on version 3: %v", err)
	}
	if _, err := r.stale.Answer(context.Background(), Query{Tenant: "t", Question: "how do I return an item"}); KindOf(err) != KindMiss {
		t.Errorf("stale tier served an entry of an old knowledge base: %v", err)
	}
}

func TestSemanticCacheGuard(t *testing.T) {
	r := newCacheRig(t, nil)
	r.run("t", "Can I return an item after 7 days?", primary("Yes, within 7 days."))
	if _, err := r.ask("t", "Can I return an item after 30 days?"); KindOf(err) != KindMiss {
		t.Errorf("7 days answer served for 30 days: %v", err)
	}
	r.run("t", "如何开发票", primary("在订单详情页申请开票"))
	if _, err := r.ask("t", "如何取消发票"); KindOf(err) != KindMiss {
		t.Errorf("开发票 answer served for 取消发票: %v", err)
	}
}

func TestSemanticCacheEmbedsOnce(t *testing.T) {
	r := newCacheRig(t, nil)
	q := Query{Tenant: "t", Question: "where is my parcel", Memo: &Memo{}}
	r.sem.Answer(context.Background(), q)
	r.sem.Remember(context.Background(), q, primary("Track it under Orders."))
	r.stale.Answer(context.Background(), q)
	if n := r.emb.calls.Load(); n != 1 {
		t.Errorf("%d embedding calls for one question, want 1", n)
	}
}

func TestStaleCacheServesOnlyWithinGrace(t *testing.T) {
	r := newCacheRig(t, nil)
	r.run("t", "how long does a refund take", primary("3 to 5 working days."))
	r.clock.Advance(time.Hour + time.Minute) // expired, within the 10 minute grace
	if _, err := r.ask("t", "how long does a refund take"); KindOf(err) != KindMiss {
		t.Fatalf("semantic cache served an expired entry: %v", err)
	}
	q := Query{Tenant: "t", Question: "How long does a refund take?", Memo: &Memo{}}
	a, err := r.stale.Answer(context.Background(), q)
	if err != nil || a.Source != SourceStaleCache || a.Text != "3 to 5 working days." || a.Model != "qwen3-max" {
		t.Fatalf("stale tier = %+v, %v; want the stale answer", a, err)
	}
	if r.stale.Source() != SourceStaleCache || r.stale.Name() != "stale_cache" {
		t.Errorf("Source %q Name %q", r.stale.Source(), r.stale.Name())
	}
	if _, err := r.stale.Answer(context.Background(), Query{Tenant: "other", Question: q.Question}); KindOf(err) != KindMiss {
		t.Errorf("stale tier crossed tenants: %v", err)
	}
	r.clock.Advance(10 * time.Minute)
	if _, err := r.stale.Answer(context.Background(), Query{Tenant: "t", Question: q.Question, Memo: &Memo{}}); KindOf(err) != KindMiss {
		t.Errorf("stale tier after grace: err = %v, want KindMiss", err)
	}
}

func TestSemanticCacheEmbedderDown(t *testing.T) {
	r := newCacheRig(t, nil)
	r.run("t", "where is my parcel", primary("Track it under Orders."))
	r.emb.fail.Store(true)
	// The exact question still hits without an embedding.
	if a, err := r.ask("t", "Where is my parcel?"); err != nil || a.Text != "Track it under Orders." {
		t.Errorf("exact hit with the embedder down = %+v, %v", a, err)
	}
	_, err := r.ask("t", "where can my parcel be")
	if err == nil || KindOf(err) == KindMiss || !errors.Is(err, errEmbedDown) {
		t.Errorf("err = %v, want the embedding failure (not a miss)", err)
	}
	q := Query{Tenant: "t", Question: "a brand new question", Memo: &Memo{}}
	r.sem.Answer(context.Background(), q)
	r.sem.Remember(context.Background(), q, primary("x")) // no vector: not stored
	if n := r.c.Size(); n != 1 {
		t.Errorf("Size = %d, want 1", n)
	}
}

func TestCacheTiersCanceled(t *testing.T) {
	r := newCacheRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tier := range []Tier{r.sem, r.stale} {
		if _, err := tier.Answer(ctx, Query{Question: "q"}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", tier.Name(), err)
		}
	}
}

func TestCacheTiersWithoutCache(t *testing.T) {
	for _, tier := range []Tier{NewCache(CacheConfig{}), NewCache(CacheConfig{Stale: true})} {
		if _, err := tier.Answer(context.Background(), Query{Question: "q"}); err == nil || KindOf(err) == KindMiss {
			t.Errorf("%s without a cache: err = %v, want a configuration error", tier.Name(), err)
		}
	}
	NewCache(CacheConfig{}).Remember(context.Background(), Query{Question: "q"}, primary("a"))
}

func TestSemanticCacheConcurrent(t *testing.T) {
	r := newCacheRig(t, []Source{SourcePrimary, SourceFallback})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				q := fmt.Sprintf("question %d about order %d", i%40, i%40)
				tenant := fmt.Sprint("t", w%2)
				if a, err := r.run(tenant, q, primary(q)); err == nil && a.Text != q {
					t.Errorf("%q answered with %q", q, a.Text)
				}
				r.stale.Answer(context.Background(), Query{Tenant: tenant, Question: q})
			}
		})
	}
	wg.Wait()
}

// TestSemanticCacheSkipsAnswerWithoutRetrieval: when the question's
// retrieval failed, the model tier answers without documents ("the
// knowledge base does not cover it"). That answer was not built on the
// knowledge base and must not be cached: once the retriever is back, the
// question must reach the model with its documents again.
func TestSemanticCacheSkipsAnswerWithoutRetrieval(t *testing.T) {
	srv, _ := upstream(t, reply(200, `{"choices":[{"message":{"role":"assistant","content":"The knowledge base does not cover this."},"finish_reason":"stop"}]}`))
	ret := &fakeRetriever{err: errors.New("vector database unreachable")}
	llm := NewLLM(LLMConfig{Candidates: []Candidate{candidate("m1", srv.URL)}, Retriever: ret})
	r := newCacheRig(t, nil)
	ctx := context.Background()

	q := Query{Tenant: "t", Question: "how do I return an item", Memo: &Memo{K: 5}}
	if _, err := r.sem.Answer(ctx, q); KindOf(err) != KindMiss {
		t.Fatalf("cache: %v, want a miss", err)
	}
	a, err := llm.Answer(ctx, q)
	if err != nil || a.Source != SourcePrimary || len(a.Docs) != 0 {
		t.Fatalf("llm = %+v, %v; want a primary answer without documents", a, err)
	}
	r.sem.Remember(ctx, q, a)
	if got, err := r.ask("t", q.Question); err == nil {
		t.Errorf("answer built after a failed retrieval was cached and served: %q", got.Text)
	}

	// A question with no relevant documents (no failure) is answered and
	// cached as usual.
	ret.err = nil
	q = Query{Tenant: "t", Question: "do you sell penguins", Memo: &Memo{K: 5}}
	a, err = llm.Answer(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	r.sem.Remember(ctx, q, a)
	if _, err := r.ask("t", q.Question); err != nil {
		t.Errorf("answer to a question with no relevant documents was not cached: %v", err)
	}
}
