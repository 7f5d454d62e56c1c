package cache

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// recordingReplica keeps what Put hands it.
type recordingReplica struct {
	mu     sync.Mutex
	stored []Entry
	tenant []string
}

func (r *recordingReplica) Stored(tenant string, _ []float32, e Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stored = append(r.stored, e)
	r.tenant = append(r.tenant, tenant)
}

func (r *recordingReplica) ShareStatus() ShareStatus { return ShareStatus{Kind: "test", Healthy: true} }

func TestPutTellsReplica(t *testing.T) {
	rep := &recordingReplica{}
	f := newFixture(t, Config{Replica: rep, Jitter: -1, TTL: time.Hour})
	f.put("acme", "How do I return an item?", "returns", 3)
	if err := f.c.Put("acme", "?!", embed1(t, f.emb, "x"), Entry{Text: "nothing"}); err != nil {
		t.Fatal(err)
	}
	if len(rep.stored) != 1 {
		t.Fatalf("replica got %d entries, want 1 (a question normalizing to nothing is not stored)", len(rep.stored))
	}
	e := rep.stored[0]
	if rep.tenant[0] != "acme" || e.Text != "returns" || e.KBVersion != 3 || e.Question != "How do I return an item?" ||
		!e.Expires.Equal(e.Created.Add(time.Hour)) || !e.Created.Equal(f.clock.Now()) {
		t.Fatalf("replica got %s %+v", rep.tenant[0], e)
	}
	if st, ok := f.c.ShareStatus(); !ok || st.Kind != "test" {
		t.Fatalf("ShareStatus = %+v, %v", st, ok)
	}
	if _, ok := New(Config{}).ShareStatus(); ok {
		t.Fatal("ShareStatus without a replica reports one")
	}
}

func TestRestore(t *testing.T) {
	rep := &recordingReplica{}
	f := newFixture(t, Config{Replica: rep, Grace: time.Hour})
	now := f.clock.Now()
	q := "How do I return an item?"
	vec := embed1(t, f.emb, q)
	e := Entry{Text: "remote", KBVersion: 1, Created: now.Add(-time.Minute), Expires: now.Add(time.Minute)}
	if err := f.c.Restore("acme", q, vec, e); err != nil {
		t.Fatal(err)
	}
	got := f.wantHit("acme", "how can I return an item", "remote", 1)
	if !got.Expires.Equal(e.Expires) || !got.Created.Equal(e.Created) {
		t.Fatalf("restored entry created %v expires %v, want %v %v", got.Created, got.Expires, e.Created, e.Expires)
	}
	f.wantMiss("globex", q, 1)
	if len(rep.stored) != 0 {
		t.Fatal("Restore told the replica")
	}

	// An older copy does not replace a newer entry; a newer one does.
	older := e
	older.Text, older.Created = "older", e.Created.Add(-time.Second)
	if err := f.c.Restore("acme", q, vec, older); !errors.Is(err, ErrNotNewer) {
		t.Fatalf("Restore of an older copy = %v, want ErrNotNewer", err)
	}
	f.wantHit("acme", q, "remote", 1)
	newer := e
	newer.Text, newer.Created = "newer", e.Created.Add(time.Second)
	if err := f.c.Restore("acme", q, vec, newer); err != nil {
		t.Fatal(err)
	}
	f.wantHit("acme", q, "newer", 1)
	if n := f.c.Len("acme"); n != 1 {
		t.Fatalf("Len = %d, want 1", n)
	}

	// Past its grace: refused. Within it: stored, served stale only.
	gone := Entry{Text: "gone", Created: now.Add(-3 * time.Hour), Expires: now.Add(-time.Hour - time.Second)}
	if err := f.c.Restore("acme", "what is the warranty", vec, gone); !errors.Is(err, ErrExpired) {
		t.Fatalf("Restore past grace = %v, want ErrExpired", err)
	}
	stale := Entry{Text: "stale", Created: now.Add(-2 * time.Hour), Expires: now.Add(-time.Minute)}
	w := "what is the warranty period"
	if err := f.c.Restore("acme", w, embed1(t, f.emb, w), stale); err != nil {
		t.Fatal(err)
	}
	f.wantMiss("acme", w, 0)
	if s, err := f.c.GetStale("acme", w, embed1(t, f.emb, w), 0); err != nil || s.Text != "stale" || !s.Stale {
		t.Fatalf("GetStale = %+v, %v", s, err)
	}
	if err := f.c.Restore("acme", q, []float32{0, 0}, e); !errors.Is(err, ErrBadVector) {
		t.Fatalf("Restore with a zero vector = %v", err)
	}
}

func TestRestoreHonoursCaps(t *testing.T) {
	f := newFixture(t, Config{MaxEntries: 2, MaxTenants: 2})
	now := f.clock.Now()
	for i, q := range []string{"alpha question", "beta question", "gamma question"} {
		e := Entry{Text: q, Created: now.Add(time.Duration(i) * time.Second), Expires: now.Add(time.Hour)}
		if err := f.c.Restore("acme", q, embed1(t, f.emb, q), e); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.c.Len("acme"); n != 2 {
		t.Fatalf("Len = %d, want MaxEntries 2", n)
	}
	for _, tn := range []string{"b", "c", "d"} {
		e := Entry{Text: tn, Created: now, Expires: now.Add(time.Hour)}
		if err := f.c.Restore(tn, "alpha question", embed1(t, f.emb, "alpha question"), e); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.c.Tenants(); n != 2 {
		t.Fatalf("Tenants = %d, want MaxTenants 2", n)
	}
}
