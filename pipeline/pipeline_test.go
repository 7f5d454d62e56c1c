package pipeline

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/tiers"
)

func TestAskOddInput(t *testing.T) {
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: tiers.NewRetrieval(tiers.RetrievalConfig{})}, {Tier: tiers.NewStatic("", "")}}})
	for _, q := range []string{"", " \t\n", "\xff\xfe", strings.Repeat("问", 100000), "\x00"} {
		res, err := p.Ask(context.Background(), tiers.Query{Tenant: q, Question: q})
		if err != nil || res.Source != tiers.SourceStatic {
			t.Fatalf("Ask(%.10q): %v %v", q, res, err)
		}
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
		{Tier: tiers.NewCache(tiers.CacheConfig{Name: "cache", Cache: c,
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
		{Tier: tiers.NewCache(tiers.CacheConfig{Name: "cache", Cache: c,
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

// The in-flight gate lets questions in until closed, and tells Close when
// the last one has left: not before, and once however questions come and
// go after the gate closed.
func TestInflightGate(t *testing.T) {
	g := inflightGate{drained: make(chan struct{})}
	if !g.enter() || !g.enter() {
		t.Fatal("open gate refused a question")
	}
	if !g.close() {
		t.Fatal("first close reported the gate closed already")
	}
	if g.close() {
		t.Fatal("second close reported it closed the gate")
	}
	if !g.closed() {
		t.Fatal("closed gate reads open")
	}
	if g.enter() {
		t.Fatal("closed gate let a question in")
	}
	g.leave()
	select {
	case <-g.drained:
		t.Fatal("drained with a question still in flight")
	default:
	}
	g.leave()
	select {
	case <-g.drained:
	default:
		t.Fatal("not drained after the last question left")
	}
	// Late questions refused after the drain do not close drained again
	// (which would panic).
	for range 3 {
		if g.enter() {
			t.Fatal("drained gate let a question in")
		}
	}
}

func TestInflightGateCloseEmpty(t *testing.T) {
	g := inflightGate{drained: make(chan struct{})}
	g.close()
	select {
	case <-g.drained:
	default:
		t.Fatal("an empty gate is not drained on close")
	}
}

// Under concurrent questions, Close's wait ends only after every question
// let in has left.
func TestInflightGateConcurrent(t *testing.T) {
	for range 50 {
		g := inflightGate{drained: make(chan struct{})}
		var mu sync.Mutex
		in := 0
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 100 {
					if !g.enter() {
						return
					}
					mu.Lock()
					in++
					mu.Unlock()
					mu.Lock()
					in--
					mu.Unlock()
					g.leave()
				}
			}()
		}
		g.close()
		<-g.drained
		mu.Lock()
		n := in
		mu.Unlock()
		if n != 0 {
			t.Fatalf("drained with %d questions in flight", n)
		}
		wg.Wait()
	}
}
