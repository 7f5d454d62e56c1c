package rediscache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/cache/rediscache"
)

// distinct are questions the hash embedder keeps apart.
var distinct = []string{"How do I return an item?", "Where is my parcel?", "Can I pay with PayPal?",
	"Do you ship to Canada?", "How long is the warranty?", "Can I change my address?"}

func TestCapsBoundWhatOthersSend(t *testing.T) {
	redistest.Client(t)
	prefix := redistest.Prefix(t)
	// Without jitter, entries expire in the order they were put: a load
	// reads the last put first.
	a := newNode(t, redistest.URL(), prefix, rediscache.Config{Cache: cache.Config{Jitter: -1}})
	b := newNode(t, redistest.URL(), prefix, rediscache.Config{Cache: cache.Config{MaxEntries: 2, MaxTenants: 2}})
	eventually(t, 5*time.Second, "B's first load", func() bool { return loaded(b) })
	for _, q := range distinct {
		a.put(t, "acme", q, q)
	}
	for i := range 4 {
		a.put(t, fmt.Sprintf("tenant-%d", i), distinct[0], "t")
	}
	eventually(t, 2*time.Second, "A's entries on B", func() bool { return b.s.ShareStatus().Received == uint64(len(distinct)+4) })
	if n := b.c.Tenants(); n != 2 {
		t.Fatalf("B holds %d tenants, want max_tenants 2", n)
	}
	for _, tn := range []string{"tenant-2", "tenant-3"} {
		if n := b.c.Len(tn); n != 1 {
			t.Fatalf("B holds %d entries of %s", n, tn)
		}
	}
	c := newNode(t, redistest.URL(), prefix, rediscache.Config{Cache: cache.Config{MaxEntries: 2}, LoadLimit: 3})
	eventually(t, 5*time.Second, "C's load", func() bool { return loaded(c) })
	if st := c.s.ShareStatus(); st.Loaded != 3 || c.c.Size() != 3 {
		t.Fatalf("C loaded %d entries, holds %d; want LoadLimit 3", st.Loaded, c.c.Size())
	}
	for _, tn := range []string{"tenant-1", "tenant-2", "tenant-3"} {
		if n := c.c.Len(tn); n != 1 {
			t.Fatalf("C holds %d entries of %s, want the 3 put last", n, tn)
		}
	}
	// A load into a capped tenant keeps the cap.
	d := newNode(t, redistest.URL(), prefix, rediscache.Config{Cache: cache.Config{MaxEntries: 2}})
	eventually(t, 5*time.Second, "D's load", func() bool { return loaded(d) })
	if n := d.c.Len("acme"); d.s.ShareStatus().Loaded != len(distinct)+4 || n != 2 {
		t.Fatalf("D loaded %d, holds %d entries of acme; want all loaded and max_entries 2 held", d.s.ShareStatus().Loaded, n)
	}
}

func TestOtherKnowledgeBaseVersionsAreNotServed(t *testing.T) {
	redistest.Client(t)
	prefix := redistest.Prefix(t)
	a := newNode(t, redistest.URL(), prefix, rediscache.Config{})
	b := newNode(t, redistest.URL(), prefix, rediscache.Config{})
	eventually(t, 5*time.Second, "B's first load", func() bool { return loaded(b) })
	q := distinct[0]
	if err := a.c.Put("acme", q, vec(t, q), cache.Entry{Text: "v2 answer", KBVersion: 2, Model: "big",
		Source: "primary", Docs: []cache.DocRef{{ID: "returns", Title: "Returns policy"}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Second, "the entry on B", func() bool { return b.s.ShareStatus().Received == 1 })
	if _, err := b.c.Get("acme", q, vec(t, q), 1); err == nil {
		t.Fatal("B served an entry of knowledge-base version 2 on version 1")
	}
	e, err := b.c.Get("acme", q, vec(t, q), 2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := a.c.Get("acme", q, vec(t, q), 2)
	if e.Text != want.Text || e.Model != "big" || e.Source != "primary" || len(e.Docs) != 1 || e.Docs[0] != want.Docs[0] ||
		!e.Created.Equal(want.Created) || !e.Expires.Equal(want.Expires) || e.Question != q {
		t.Fatalf("B's copy %+v, A's %+v", e, want)
	}
}

func TestSlowRedisDelaysNoQuestion(t *testing.T) {
	srv := redistest.StartServer(t)
	a := newNode(t, srv.URL(), "slow", rediscache.Config{OpTimeout: 100 * time.Millisecond})
	eventually(t, 5*time.Second, "A's first load", func() bool { return loaded(a) })
	srv.Pause()
	defer srv.Resume()
	// Puts and lookups never wait for Redis: 200 of each that waited
	// would take at least 200 * OpTimeout (20s).
	start := time.Now()
	for i := range 200 {
		q := fmt.Sprintf("%s (%d)", distinct[i%len(distinct)], i)
		a.put(t, "acme", q, q)
		if a.text(t, "acme", q) != q {
			t.Fatalf("miss on %q", q)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("200 puts and lookups took %v with Redis paused", d)
	}
	srv.Resume()
	eventually(t, 10*time.Second, "the queue to drain", func() bool { st := a.s.ShareStatus(); return st.Queued == 0 && st.Healthy })
	if st := a.s.ShareStatus(); st.Written != 200 || st.Dropped != 0 {
		t.Fatalf("after the pause: %+v", st)
	}
}
