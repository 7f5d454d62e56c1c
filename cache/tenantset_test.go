package cache

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestMaxTenantsEvictsLeastRecentlyUsed: beyond MaxTenants the least
// recently used tenant is dropped whole; a Get counts as a use.
func TestMaxTenantsEvictsLeastRecentlyUsed(t *testing.T) {
	f := newFixture(t, Config{MaxTenants: 3})
	for _, name := range []string{"a", "b", "c"} {
		f.put(name, "how do I return an item", name+" returns", 0)
	}
	f.wantHit("a", "how can I return an item", "a returns", 0) // a is now the most recent
	f.put("d", "how do I return an item", "d returns", 0)      // drops b
	if n, ev := f.c.Tenants(), f.c.Stats().TenantEvictions; n != 3 || ev != 1 {
		t.Fatalf("Tenants %d TenantEvictions %d, want 3 1", n, ev)
	}
	f.wantMiss("b", "how do I return an item", 0)
	for _, name := range []string{"a", "c", "d"} {
		f.wantHit(name, "how do I return an item", name+" returns", 0)
	}
	// A dropped tenant starts again empty.
	f.put("b", "where is my parcel", "b tracking", 0)
	f.wantHit("b", "where is my parcel", "b tracking", 0)
	f.wantMiss("b", "how do I return an item", 0)
	if f.c.Tenants() != 3 || f.c.Len("a") != 0 {
		t.Errorf("Tenants %d, Len a %d; want 3 with a (least recent) dropped", f.c.Tenants(), f.c.Len("a"))
	}
}

// TestTenantFreedWhenEntriesPastGrace: a tenant whose entries are all past
// their grace, or which has none left, is freed by the next sweep, and its
// entries count as expirations.
func TestTenantFreedWhenEntriesPastGrace(t *testing.T) {
	f := newFixture(t, Config{TTL: time.Hour, Jitter: -1, Grace: 10 * time.Minute})
	f.put("idle", "how do I return an item", "a", 1)
	f.put("idle", "where is my parcel", "b", 1)
	f.put("reloaded", "how do I reset my password", "c", 0)
	f.put("busy", "what payment methods do you accept", "d", 1)
	f.c.Invalidate(1) // empties "reloaded"
	f.clock.Advance(time.Hour + 9*time.Minute)
	f.put("busy", "how long does a refund take", "e", 1) // sweeps: "reloaded" is empty
	if n := f.c.Tenants(); n != 2 {
		t.Fatalf("Tenants %d after the first sweep, want 2 (idle is still in grace)", n)
	}
	if _, err := f.c.GetStale("idle", "how do I return an item", nil, 1); err != nil {
		t.Fatalf("GetStale in grace = %v, want a stale hit", err)
	}
	f.clock.Advance(time.Hour)
	f.put("busy", "how do I change my address", "f", 1)
	if n, exp := f.c.Tenants(), f.c.Stats().Expirations; n != 1 || exp != 3 {
		t.Fatalf("Tenants %d Expirations %d, want 1 (busy) and 3 (idle's two, busy's first)", n, exp)
	}
	f.put("idle", "how do I return an item", "a again", 0)
	f.wantHit("idle", "how do I return an item", "a again", 0)
}

// TestDroppedTenantServesNothing: a caller that found a tenant before it
// was dropped can neither read nor write it, so Put retries on its
// successor.
func TestDroppedTenantServesNothing(t *testing.T) {
	f := newFixture(t, Config{})
	f.put("a", "how do I return an item", "a", 0)
	tn := f.c.find("a", false)
	f.c.Purge()
	now := f.clock.Now()
	if _, ok := tn.lookup("how do I return an item", nil, 0, true, now); ok {
		t.Error("lookup on a dropped tenant hit")
	}
	q := "where is my parcel"
	if err := tn.put(q, Normalize(q), embed1(t, f.emb, q), Entry{Text: "b", Expires: now.Add(time.Hour)}, now); !errors.Is(err, errTenantGone) {
		t.Errorf("put on a dropped tenant = %v, want errTenantGone", err)
	}
}

// TestConcurrentTenantEviction: tenants dropped while other goroutines use
// them keep the bounds and lose no Put to a dropped tenant.
func TestConcurrentTenantEviction(t *testing.T) {
	f := newFixture(t, Config{MaxTenants: 2, MaxEntries: 50})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 300 {
				tenant := fmt.Sprint("t", (w+i)%5)
				q := fmt.Sprintf("question %d from worker %d", i%60, w)
				vec := embed1(t, f.emb, q)
				if err := f.c.Put(tenant, q, vec, Entry{Text: q}); err != nil {
					t.Errorf("Put: %v", err)
					return
				}
				if e, err := f.c.Get(tenant, q, vec, 0); err == nil && e.Text != q {
					t.Errorf("Get(%q) = %q", q, e.Text)
				}
			}
		})
	}
	wg.Wait()
	if n, size := f.c.Tenants(), f.c.Size(); n > 2 || size > 2*50 {
		t.Errorf("Tenants %d Size %d, want <= 2 and <= 100", n, size)
	}
	if f.c.Stats().TenantEvictions == 0 {
		t.Error("no tenant evicted by 5 tenants over MaxTenants 2")
	}
}

// heapAfterGC returns the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// idleTenantBytes is the budget of one idle tenant holding one entry.
const idleTenantBytes = 4 << 10

// TestIdleTenantMemory guards the memory of an idle tenant: 5,000 tenants
// holding one entry each cost under idleTenantBytes apiece (the projection
// planes, the same for every tenant, are not copied into each).
func TestIdleTenantMemory(t *testing.T) {
	const tenants = 5000
	emb := NewHashEmbedder(0)
	q := "how do I return an item"
	vec := embed1(t, emb, q)
	c := New(Config{})
	// One tenant first, so that what every tenant shares is allocated.
	if err := c.Put("warm", q, vec, Entry{Text: "a"}); err != nil {
		t.Fatal(err)
	}
	names := make([]string, tenants)
	for i := range names {
		names[i] = fmt.Sprintf("tenant-%05d", i)
	}
	before := heapAfterGC()
	for _, name := range names {
		if err := c.Put(name, q, vec, Entry{Text: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	after := heapAfterGC()
	per := float64(after-before) / tenants
	t.Logf("%d tenants, one entry each: %.0f bytes per tenant", tenants, per)
	if per > idleTenantBytes {
		t.Errorf("%.0f bytes per idle tenant, want <= %d", per, idleTenantBytes)
	}
	runtime.KeepAlive(c)
}
