package rediscache_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/cache/rediscache"
	"github.com/ragfuse/ragfuse/clock"
)

// testOpTimeout is longer than the default, so that a loaded test machine
// does not pass for an outage.
const testOpTimeout = 500 * time.Millisecond

var emb = cache.NewHashEmbedder(cache.DefaultHashDim)

// node is one simulated instance.
type node struct {
	s   *rediscache.Shared
	c   *cache.Cache
	log *redistest.Log
}

// newNode starts an instance on url under prefix; cfg's URL, Prefix,
// OpTimeout and Logger are set here.
func newNode(t testing.TB, url, prefix string, cfg rediscache.Config) *node {
	t.Helper()
	n := &node{log: &redistest.Log{}}
	cfg.URL, cfg.Prefix, cfg.Logger = url, prefix, slog.New(n.log)
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = testOpTimeout
	}
	s, c, err := rediscache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	n.s, n.c = s, c
	return n
}

func vec(t testing.TB, q string) []float32 {
	t.Helper()
	v, err := emb.Embed(context.Background(), []string{q})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

func (n *node) put(t testing.TB, tenant, q, text string) {
	t.Helper()
	if err := n.c.Put(tenant, q, vec(t, q), cache.Entry{Text: text, KBVersion: 1}); err != nil {
		t.Fatal(err)
	}
}

// text returns the answer n serves tenant for q, "" on a miss.
func (n *node) text(t testing.TB, tenant, q string) string {
	t.Helper()
	e, err := n.c.Get(tenant, q, vec(t, q), 1)
	if errors.Is(err, cache.ErrMiss) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return e.Text
}

// eventually polls cond every 2ms for at most d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func loaded(n *node) bool {
	st := n.s.ShareStatus()
	return !st.Loading && st.Loads > 0 && !st.LoadedAt.IsZero()
}

func TestEntryReachesOtherInstances(t *testing.T) {
	redistest.Client(t)
	prefix := redistest.Prefix(t)
	a := newNode(t, redistest.URL(), prefix, rediscache.Config{})
	b := newNode(t, redistest.URL(), prefix, rediscache.Config{})
	c := newNode(t, redistest.URL(), prefix, rediscache.Config{})
	for _, n := range []*node{a, b, c} {
		eventually(t, 5*time.Second, "the first load", func() bool { return loaded(n) })
	}
	const q = "How do I return an item?"
	start := time.Now()
	a.put(t, "acme", q, "within 30 days")
	for i, n := range []*node{b, c} {
		eventually(t, time.Second, "the entry on another instance", func() bool { return n.text(t, "acme", q) != "" })
		if got := n.text(t, "acme", "how can I return an item"); got != "within 30 days" {
			t.Fatalf("instance %d serves %q", i+1, got)
		}
	}
	t.Logf("an entry stored on A is served by B and C after %v", time.Since(start))
	if got := b.text(t, "globex", q); got != "" {
		t.Fatalf("another tenant is served %q", got)
	}
	if st := a.s.ShareStatus(); st.Written != 1 || st.Received != 0 || !st.Healthy || st.Kind != "redis" {
		t.Fatalf("A's status %+v", st)
	}
	if st := b.s.ShareStatus(); st.Received != 1 || st.Written != 0 {
		t.Fatalf("B's status %+v", st)
	}
	// Restore does not echo: B stored nothing of its own, so wrote nothing.
	time.Sleep(20 * time.Millisecond)
	if st := a.s.ShareStatus(); st.Received != 0 {
		t.Fatalf("A received its own entry back: %+v", st)
	}
}

func TestTenantsStayApartThroughRedis(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	a := newNode(t, redistest.URL(), prefix, rediscache.Config{})
	b := newNode(t, redistest.URL(), prefix, rediscache.Config{})
	eventually(t, 5*time.Second, "the first load", func() bool { return loaded(b) })
	const q = "What is the warranty period?"
	tenants := []string{"acme", "globex", "acme:globex", "x%3Ay"}
	for _, tn := range tenants {
		a.put(t, tn, q, "answer of "+tn)
	}
	for _, tn := range tenants {
		eventually(t, time.Second, "tenant "+tn+"'s entry on B", func() bool { return b.text(t, tn, q) != "" })
		if got := b.text(t, tn, q); got != "answer of "+tn {
			t.Fatalf("B serves tenant %s %q", tn, got)
		}
	}
	if got := b.text(t, "initech", q); got != "" {
		t.Fatalf("a tenant with no entry is served %q", got)
	}
	// Every key carries its entry's tenant, and only that tenant's entry.
	keys, err := rdb.Keys(context.Background(), prefix+":cache:e:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(tenants) {
		t.Fatalf("%d entry keys, want %d: %v", len(keys), len(tenants), keys)
	}
	for _, k := range keys {
		v, err := rdb.Get(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		ok := false
		for _, tn := range tenants {
			if strings.Contains(v, `"a":"answer of `+tn+`"`) {
				ok = strings.Contains(k, ":cache:e:"+escape(tn)+":")
			}
		}
		if !ok {
			t.Fatalf("key %s holds %s", k, v)
		}
	}
	// A restarted instance loads each entry into its own tenant.
	c := newNode(t, redistest.URL(), prefix, rediscache.Config{})
	eventually(t, 5*time.Second, "C's load", func() bool { return loaded(c) })
	if st := c.s.ShareStatus(); st.Loaded != len(tenants) {
		t.Fatalf("C loaded %d entries, want %d", st.Loaded, len(tenants))
	}
	for _, tn := range tenants {
		if got := c.text(t, tn, q); got != "answer of "+tn {
			t.Fatalf("C serves tenant %s %q", tn, got)
		}
		if n := c.c.Len(tn); n != 1 {
			t.Fatalf("C holds %d entries of %s", n, tn)
		}
	}
}

func escape(tenant string) string {
	return strings.NewReplacer("%", "%25", ":", "%3A").Replace(tenant)
}

func TestRestartedInstanceLoadsLiveEntries(t *testing.T) {
	redistest.Client(t)
	prefix := redistest.Prefix(t)
	a := newNode(t, redistest.URL(), prefix, rediscache.Config{})
	qs := []string{"How do I return an item?", "Where is my order?", "Can I pay with PayPal?"}
	for i, q := range qs {
		a.put(t, "acme", q, "answer "+string(rune('0'+i)))
	}
	eventually(t, 2*time.Second, "A's writes", func() bool { return a.s.ShareStatus().Written == uint64(len(qs)) })
	b := newNode(t, redistest.URL(), prefix, rediscache.Config{})
	eventually(t, 5*time.Second, "B's load", func() bool { return loaded(b) })
	st := b.s.ShareStatus()
	if st.Loaded != len(qs) || st.Loads != 1 {
		t.Fatalf("B's status after start: %+v", st)
	}
	for i, q := range qs {
		if got := b.text(t, "acme", q); got != "answer "+string(rune('0'+i)) {
			t.Fatalf("B serves %q for %q", got, q)
		}
	}
	if !strings.Contains(b.log.All(), "INFO shared cache: loaded live entries prefix="+prefix+" entries=3") {
		t.Fatalf("B's log:\n%s", b.log.All())
	}
}

func TestQueueBoundDropsOldest(t *testing.T) {
	srv := redistest.StartServer(t)
	a := newNode(t, srv.URL(), "fault", rediscache.Config{QueueSize: 4, RetryInterval: 20 * time.Millisecond})
	b := newNode(t, srv.URL(), "fault", rediscache.Config{RetryInterval: 20 * time.Millisecond})
	eventually(t, 5*time.Second, "the first loads", func() bool { return loaded(a) && loaded(b) })

	srv.Kill()
	qs := []string{"How do I return an item?", "Where is my parcel?", "Can I pay with PayPal?",
		"Do you ship to Canada?", "How long is the warranty?", "Can I change my address?",
		"Is there a student discount?", "How do I reset my password?", "Which sizes do the boots come in?",
		"When does the store open on Sunday?"}
	start := time.Now()
	for i, q := range qs {
		a.put(t, "acme", q, q)
		if i == 0 {
			eventually(t, 5*time.Second, "A to notice the outage", func() bool { return !a.s.Healthy() })
		}
	}
	// Local hits at once: no lookup waits on Redis.
	for _, q := range qs {
		if got := a.text(t, "acme", q); got != q {
			t.Fatalf("A serves %q for %q during the outage", got, q)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("puts and lookups took %v during the outage", d)
	}
	if st := a.s.ShareStatus(); st.Queued != 4 || st.Dropped != 6 || st.Healthy || st.Written != 0 {
		t.Fatalf("A's status during the outage: %+v", st)
	}

	srv.Start()
	eventually(t, 10*time.Second, "the queued entries to reach B", func() bool {
		for _, q := range qs[6:] {
			if b.text(t, "acme", q) != q {
				return false
			}
		}
		return true
	})
	// qs[0] may have been on its way when the outage began (the writer
	// retries a write within OpTimeout); qs[1:6] were dropped from the
	// queue and never sent.
	for _, q := range qs[1:6] {
		if got := b.text(t, "acme", q); got != "" {
			t.Fatalf("B serves a dropped entry %q: %+v %+v", got, a.s.ShareStatus(), b.s.ShareStatus())
		}
	}
	eventually(t, 5*time.Second, "A's resync", func() bool { st := a.s.ShareStatus(); return st.Queued == 0 && st.Healthy })
	if st := a.s.ShareStatus(); st.Written < 4 || st.Written > 5 || st.Dropped != 6 {
		t.Fatalf("A's status after the outage: %+v", st)
	}
	// A logged the outage once and its end once; B, whose reads go-redis
	// may have retried across the short outage, at most that.
	if w, i := a.log.Count("WARN"), a.log.Count("INFO shared cache: redis reachable"); w != 1 || i != 1 {
		t.Fatalf("A's log: %d warnings, %d recoveries, want 1 each:\n%s", w, i, a.log.All())
	}
	if w, i := b.log.Count("WARN"), b.log.Count("INFO shared cache: redis reachable"); w > 1 || i != w {
		t.Fatalf("B's log: %d warnings, %d recoveries:\n%s", w, i, b.log.All())
	}
}

// TestOlderEntrySeenNotStored: an entry of another instance that is older
// than the one held for the same question is read (Seen) but not stored
// (Received), and the newer answer stays.
func TestOlderEntrySeenNotStored(t *testing.T) {
	redistest.Client(t)
	prefix := redistest.Prefix(t)
	a := newNode(t, redistest.URL(), prefix, rediscache.Config{})
	later := clock.NewManual(time.Now().Add(time.Hour)) // B's entries are newer than A's
	b := newNode(t, redistest.URL(), prefix, rediscache.Config{Cache: cache.Config{Clock: later}})
	eventually(t, 5*time.Second, "the first loads", func() bool { return loaded(a) && loaded(b) })
	const q = "How do I return an item?"
	b.put(t, "acme", q, "newer")
	eventually(t, time.Second, "B's entry on A", func() bool { return a.s.ShareStatus().Received == 1 })
	a.put(t, "acme", q, "older")
	eventually(t, time.Second, "A's entry read by B", func() bool { return b.s.ShareStatus().Seen == 1 })
	if st := b.s.ShareStatus(); st.Received != 0 || st.Written != 1 {
		t.Fatalf("B's status %+v; want A's older entry seen, not stored", st)
	}
	if got := b.text(t, "acme", q); got != "newer" {
		t.Fatalf("B serves %q, want its newer answer", got)
	}
}
