package cache

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
)

// fixture is a cache on a manual clock with the hash embedder.
type fixture struct {
	t     *testing.T
	clock *manualClock
	emb   *HashEmbedder
	c     *Cache
}

func newFixture(t *testing.T, cfg Config) *fixture {
	f := &fixture{t: t, clock: newManualClock(), emb: NewHashEmbedder(0)}
	cfg.Clock = f.clock
	f.c = New(cfg)
	return f
}

func (f *fixture) put(tenant, q, text string, kb uint64) {
	f.t.Helper()
	if err := f.c.Put(tenant, q, embed1(f.t, f.emb, q), Entry{Text: text, KBVersion: kb}); err != nil {
		f.t.Fatalf("Put(%q): %v", q, err)
	}
}

func (f *fixture) get(tenant, q string, kb uint64) (Entry, error) {
	f.t.Helper()
	return f.c.Get(tenant, q, embed1(f.t, f.emb, q), kb)
}

func (f *fixture) wantHit(tenant, q, text string, kb uint64) Entry {
	f.t.Helper()
	e, err := f.get(tenant, q, kb)
	if err != nil || e.Text != text {
		f.t.Fatalf("Get(%s, %q) = %q, %v; want %q", tenant, q, e.Text, err, text)
	}
	return e
}

func (f *fixture) wantMiss(tenant, q string, kb uint64) {
	f.t.Helper()
	if e, err := f.get(tenant, q, kb); !errors.Is(err, ErrMiss) {
		f.t.Fatalf("Get(%s, %q) = %q, %v; want ErrMiss", tenant, q, e.Text, err)
	}
}

func TestTenantIsolation(t *testing.T) {
	f := newFixture(t, Config{})
	f.put("acme", "How do I return an item?", "acme returns", 0)
	f.put("globex", "How do I return an item?", "globex returns", 0)
	f.wantHit("acme", "how can I return an item", "acme returns", 0)
	f.wantHit("globex", "How do I return an item", "globex returns", 0)
	f.wantMiss("initech", "How do I return an item?", 0)
	f.put("acme", "如何开发票", "acme invoices", 0)
	f.wantMiss("globex", "如何开发票", 0)
	if f.c.Len("acme") != 2 || f.c.Len("globex") != 1 || f.c.Tenants() != 2 || f.c.Size() != 3 {
		t.Errorf("Len acme %d globex %d, Tenants %d, Size %d; want 2 1 2 3",
			f.c.Len("acme"), f.c.Len("globex"), f.c.Tenants(), f.c.Size())
	}
}

func TestExactMatch(t *testing.T) {
	f := newFixture(t, Config{})
	f.put("t", "Where is my parcel?", "tracking", 0)
	// An exact match of the normalized question hits even without a vector.
	e, err := f.c.Get("t", "  where IS my parcel ", nil, 0)
	if err != nil || e.Text != "tracking" || e.Similarity != 1 {
		t.Fatalf("Get = %+v, %v; want an exact hit", e, err)
	}
	// Putting the same normalized question replaces the entry.
	f.put("t", "where is my parcel", "tracking v2", 0)
	if f.c.Len("t") != 1 {
		t.Errorf("Len = %d after replacing, want 1", f.c.Len("t"))
	}
	f.wantHit("t", "Where is my parcel?", "tracking v2", 0)
}

func TestTTLJitter(t *testing.T) {
	const ttl, jitter = time.Hour, 0.5
	f := newFixture(t, Config{TTL: ttl, Jitter: jitter, Grace: -1})
	start := f.clock.Now()
	var expires []time.Time
	for i := range 50 {
		q := fmt.Sprintf("question number %d about order %d", i, i)
		f.put("t", q, "a", 0)
		e, _ := f.c.Get("t", q, nil, 0)
		expires = append(expires, e.Expires)
	}
	distinct := map[time.Time]bool{}
	for _, exp := range expires {
		if d := exp.Sub(start); d < ttl || d >= time.Duration(float64(ttl)*(1+jitter)) {
			t.Errorf("expiry after %v, want in [%v, %v)", d, ttl, time.Duration(float64(ttl)*(1+jitter)))
		}
		distinct[exp] = true
	}
	if len(distinct) < 40 {
		t.Errorf("%d distinct expiry times of 50 entries written together, want spread", len(distinct))
	}
	// Walk the clock through the jitter window: entries expire one by one.
	alive := func() int {
		n := 0
		for i := range 50 {
			q := fmt.Sprintf("question number %d about order %d", i, i)
			if _, err := f.c.Get("t", q, nil, 0); err == nil {
				n++
			}
		}
		return n
	}
	f.clock.Advance(ttl - time.Second)
	if n := alive(); n != 50 {
		t.Fatalf("%d alive just before TTL, want 50", n)
	}
	f.clock.Advance(time.Second + ttl/4)
	if n := alive(); n == 0 || n == 50 {
		t.Errorf("%d alive in the middle of the jitter window, want some but not all", n)
	}
	f.clock.Advance(ttl / 4)
	if n := alive(); n != 0 {
		t.Errorf("%d alive after TTL*(1+jitter), want 0", n)
	}
}

func TestNoJitter(t *testing.T) {
	f := newFixture(t, Config{TTL: time.Minute, Jitter: -1})
	f.put("t", "q one", "a", 0)
	e := f.wantHit("t", "q one", "a", 0)
	if e.Expires.Sub(e.Created) != time.Minute {
		t.Errorf("lifetime %v, want exactly 1m", e.Expires.Sub(e.Created))
	}
}

func TestCapEvictsLeastRecentlyUsed(t *testing.T) {
	f := newFixture(t, Config{MaxEntries: 3})
	f.put("t", "how do I track my parcel", "track", 0)
	f.put("t", "how do I reset my password", "password", 0)
	f.put("t", "what payment methods do you accept", "payment", 0)
	f.wantHit("t", "how do I track my parcel", "track", 0) // now most recent
	f.put("t", "how long does a refund take", "refund", 0) // evicts "password"
	if got := f.c.Len("t"); got != 3 {
		t.Fatalf("Len = %d, want the cap 3", got)
	}
	f.wantMiss("t", "how do I reset my password", 0)
	f.wantHit("t", "how do I track my parcel", "track", 0)
	f.wantHit("t", "what payment methods do you accept", "payment", 0)
	f.wantHit("t", "how long does a refund take", "refund", 0)
	if ev := f.c.Stats().Evictions; ev != 1 {
		t.Errorf("Evictions = %d, want 1", ev)
	}
	// The cap is per tenant.
	f.put("u", "how do I reset my password", "password", 0)
	if f.c.Len("t") != 3 || f.c.Len("u") != 1 {
		t.Errorf("Len t %d u %d, want 3 1", f.c.Len("t"), f.c.Len("u"))
	}
}

// TestCapBoundsMemory writes far more entries than the cap, past the
// exact-search size, and checks the index shrinks with the evictions.
func TestCapBoundsMemory(t *testing.T) {
	f := newFixture(t, Config{MaxEntries: 2500})
	for i := range 6000 {
		q := fmt.Sprintf("order %d question %d", i, i*7)
		if err := f.c.Put("t", q, embed1(t, f.emb, q), Entry{Text: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	tn := f.c.find("t", false)
	if f.c.Len("t") != 2500 || tn.idx.len() != 2500 || tn.exact.ItemCount() != 2500 {
		t.Fatalf("Len %d, index %d, exact %d; want 2500 each", f.c.Len("t"), tn.idx.len(), tn.exact.ItemCount())
	}
	f.wantHit("t", "order 5999 question 41993", "5999", 0)
	f.wantMiss("t", "order 0 question 0", 0)
}

func TestKBVersion(t *testing.T) {
	f := newFixture(t, Config{})
	f.put("t", "how do I return an item", "v1 answer", 1)
	f.wantHit("t", "how do I return an item", "v1 answer", 1)
	f.wantMiss("t", "how do I return an item", 2) // the knowledge base was reloaded
	if _, err := f.c.GetStale("t", "how do I return an item", nil, 2); !errors.Is(err, ErrMiss) {
		t.Errorf("GetStale on a new version = %v, want ErrMiss", err)
	}
	f.put("u", "where is my parcel", "v2 answer", 2)
	if n := f.c.Invalidate(2); n != 1 {
		t.Errorf("Invalidate removed %d, want 1", n)
	}
	if f.c.Len("t") != 0 || f.c.Len("u") != 1 {
		t.Errorf("after Invalidate: Len t %d u %d, want 0 1", f.c.Len("t"), f.c.Len("u"))
	}
	f.c.Purge()
	if f.c.Size() != 0 || f.c.Tenants() != 0 {
		t.Errorf("after Purge: Size %d Tenants %d, want 0 0", f.c.Size(), f.c.Tenants())
	}
}

func TestGetStale(t *testing.T) {
	f := newFixture(t, Config{TTL: time.Hour, Jitter: -1, Grace: 30 * time.Minute})
	f.put("t", "how do I return an item", "answer", 0)
	q := "how can I return an item"
	vec := embed1(t, f.emb, q)
	e, err := f.c.GetStale("t", q, vec, 0)
	if err != nil || e.Stale {
		t.Fatalf("GetStale while fresh = %+v, %v; want a fresh entry", e, err)
	}
	f.clock.Advance(time.Hour + time.Minute)
	f.wantMiss("t", q, 0)
	e, err = f.c.GetStale("t", q, vec, 0)
	if err != nil || !e.Stale || e.Text != "answer" {
		t.Fatalf("GetStale in grace = %+v, %v; want a stale entry", e, err)
	}
	f.clock.Advance(30 * time.Minute)
	if _, err := f.c.GetStale("t", q, vec, 0); !errors.Is(err, ErrMiss) {
		t.Fatalf("GetStale after grace = %v, want ErrMiss", err)
	}
	// The next Put sweeps the entry past its grace.
	f.put("t", "another question entirely", "x", 0)
	if f.c.Len("t") != 1 || f.c.Stats().Expirations != 1 {
		t.Errorf("Len %d Expirations %d after sweep, want 1 1", f.c.Len("t"), f.c.Stats().Expirations)
	}
}

func TestBadVectors(t *testing.T) {
	f := newFixture(t, Config{})
	nan := float32(math.NaN())
	tiny := math.Float32frombits(1) // subnormal: the norm underflows
	for _, v := range [][]float32{nil, {}, {0, 0, 0}, {1, nan}, {float32(math.Inf(1)), 0}, {tiny, 0, tiny}} {
		if err := f.c.Put("t", "q", v, Entry{Text: "a"}); !errors.Is(err, ErrBadVector) {
			t.Errorf("Put(%v) = %v, want ErrBadVector", v, err)
		}
	}
	f.put("t", "how do I return an item", "a", 0)
	if err := f.c.Put("t", "other", []float32{1, 2, 3}, Entry{Text: "a"}); !errors.Is(err, ErrBadVector) {
		t.Errorf("Put of another dimension = %v, want ErrBadVector", err)
	}
	// Lookups with unusable vectors miss instead of failing.
	sub := make([]float32, 256)
	sub[7] = tiny
	for _, v := range [][]float32{nil, {1, 2, 3}, make([]float32, 256), {nan}, sub} {
		if _, err := f.c.Get("t", "how can I return an item", v, 0); !errors.Is(err, ErrMiss) {
			t.Errorf("Get(%v) = %v, want ErrMiss", v, err)
		}
	}
}

func TestEntryIsCopied(t *testing.T) {
	f := newFixture(t, Config{})
	docs := []DocRef{{ID: "returns", Title: "Returns"}}
	if err := f.c.Put("t", "q", embed1(t, f.emb, "q"), Entry{Text: "a", Docs: docs}); err != nil {
		t.Fatal(err)
	}
	docs[0].ID = "changed"
	e := f.wantHit("t", "q", "a", 0)
	e.Docs[0].ID = "changed again"
	if e := f.wantHit("t", "q", "a", 0); e.Docs[0].ID != "returns" || e.Question != "q" {
		t.Errorf("stored entry changed through a caller's slice: %+v", e)
	}
}

func TestConcurrentUse(t *testing.T) {
	f := newFixture(t, Config{MaxEntries: 300})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			tenant := fmt.Sprint("t", w%2)
			for i := range 400 {
				q := fmt.Sprintf("question %d from worker %d", i%350, w)
				vec := embed1(t, f.emb, q)
				if i%3 == 0 {
					_ = f.c.Put(tenant, q, vec, Entry{Text: q})
				} else if e, err := f.c.Get(tenant, q, vec, 0); err == nil && e.Text != q {
					t.Errorf("Get(%q) = %q", q, e.Text)
				}
				if i%100 == 0 {
					f.c.Invalidate(0)
					f.c.Size()
				}
			}
		})
	}
	wg.Wait()
	if f.c.Len("t0") > 300 || f.c.Len("t1") > 300 {
		t.Errorf("Len t0 %d t1 %d, want <= 300", f.c.Len("t0"), f.c.Len("t1"))
	}
}

func TestDefaults(t *testing.T) {
	got := New(Config{}).Config()
	if got.Similarity != 0.92 || got.TTL != 24*time.Hour || got.Jitter != 0.1 ||
		got.MaxEntries != 10000 || got.MaxTenants != 10000 || got.Grace != time.Hour || got.Clock == nil {
		t.Errorf("defaults = %+v", got)
	}
}

// TestSimilarityOneHitsIdenticalVector guards Similarity 1: the float32
// cosine of a vector with itself often comes out just below 1, and a
// lookup with the very vector that was stored must still hit.
func TestSimilarityOneHitsIdenticalVector(t *testing.T) {
	c := New(Config{Similarity: 1})
	misses := 0
	for i := range 100 {
		v := make([]float32, 64)
		for j := range v {
			v[j] = float32(math.Sin(float64(i*64+j)*1.7)) + 0.3
		}
		tenant := fmt.Sprint("t", i)
		// Different keys, so that only the vector can match.
		if err := c.Put(tenant, "how do I return an item", v, Entry{Text: "a"}); err != nil {
			t.Fatal(err)
		}
		e, err := c.Get(tenant, "how can I return an item", v, 0)
		if err != nil {
			misses++
			continue
		}
		if e.Similarity > 1 || e.Similarity < 1-simEps {
			t.Errorf("tenant %s: Similarity = %v, want 1 less rounding", tenant, e.Similarity)
		}
	}
	if misses != 0 {
		t.Errorf("%d of 100 lookups with the stored vector missed at Similarity 1", misses)
	}
}
