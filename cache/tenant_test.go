package cache

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestGetLooksPastUnusableNearerEntries: Get returns the most similar entry
// that qualifies, however many nearer entries do not (here, entries built on
// an older knowledge-base version, which stay until Invalidate or expiry).
func TestGetLooksPastUnusableNearerEntries(t *testing.T) {
	f := newFixture(t, Config{TTL: time.Hour, Jitter: -1, Grace: time.Hour})
	old := []string{
		"how do I return an item", "how can I return an item",
		"how do I return an item please", "please how do I return an item",
		"hi how do I return an item", "how to return an item",
	}
	// Unrelated entries, so that the index searches by sketches.
	for i := range 400 {
		f.put("t", fmt.Sprintf("order %d question %d", i, i*7), "filler", 2)
	}
	for _, q := range old {
		f.put("t", q, "v1 answer", 1)
	}
	f.put("t", "i want to return an item", "v2 answer", 2)
	// Every old entry is nearer to this question than the current one,
	// which is still well above the threshold.
	q := "so how do I return an item"
	if s := cosine(embed1(t, f.emb, q), embed1(t, f.emb, "i want to return an item")); s < 0.95 {
		t.Fatalf("similarity to the current entry %.3f, test needs >= 0.95", s)
	}
	f.wantHit("t", q, "v2 answer", 2)
	// Nor must expired entries in their grace period.
	f.c.Invalidate(2)
	for _, q := range old {
		f.put("t", q, "expired answer", 2)
	}
	f.clock.Advance(time.Hour + time.Minute) // expired, within the grace
	f.put("t", "i want to return an item", "fresh answer", 2)
	if f.c.Len("t") != 400+len(old)+1 {
		t.Fatalf("Len %d, want the fillers, the %d expired entries and the fresh one", f.c.Len("t"), len(old))
	}
	f.wantHit("t", q, "fresh answer", 2)
	if r := f.c.Stats().GuardRejects; r != 0 {
		t.Errorf("GuardRejects = %d, want 0", r)
	}
}

// realTimeClock is the system clock moved ahead by hand.
type realTimeClock struct{ ahead atomic.Int64 }

func (c *realTimeClock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// TestSweepCountsExpirationsOnSystemTime: with a clock that follows real time
// (as the system clock does), entries swept past their grace are counted in
// Stats.Expirations.
func TestSweepCountsExpirationsOnSystemTime(t *testing.T) {
	clock := &realTimeClock{}
	emb := NewHashEmbedder(0)
	c := New(Config{TTL: time.Nanosecond, Jitter: -1, Grace: -1, Clock: clock})
	q := "how do I return an item"
	if err := c.Put("t", q, embed1(t, emb, q), Entry{Text: "a"}); err != nil {
		t.Fatal(err)
	}
	clock.ahead.Store(int64(time.Minute)) // past the next sweep
	q = "where is my parcel"
	if err := c.Put("t", q, embed1(t, emb, q), Entry{Text: "b"}); err != nil {
		t.Fatal(err)
	}
	if n, exp := c.Len("t"), c.Stats().Expirations; n != 1 || exp != 1 {
		t.Errorf("Len %d Expirations %d after the sweep, want 1 1", n, exp)
	}
}
