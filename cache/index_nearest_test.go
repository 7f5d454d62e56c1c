package cache

import (
	"math/rand/v2"
	"testing"
)

// TestSearchAfterRemovalsNoStalePositions: a thresholded search over more
// than exactBelowMin vectors must only consider positions of live vectors,
// also after earlier searches left their candidates in the scratch buffers
// and entries were removed since.
func TestSearchAfterRemovalsNoStalePositions(t *testing.T) {
	const dim, n = 64, 600
	r := rand.New(rand.NewPCG(1, 2))
	base := make([]float32, dim)
	for j := range base {
		base[j] = float32(r.NormFloat64())
	}
	near := func() []float32 {
		v := make([]float32, dim)
		for j := range v {
			v[j] = base[j] + 0.001*float32(r.NormFloat64())
		}
		return v
	}
	c := New(Config{MaxEntries: 10 * n, Clock: newManualClock()})
	for i := range n {
		kb := uint64(2)
		if i%2 == 0 {
			kb = 1
		}
		q := "question number " + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if err := c.Put("t", q, near(), Entry{Text: q, KBVersion: kb}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Get("t", "something else entirely", base, 2); err != nil {
		t.Fatalf("Get before Invalidate: %v", err)
	}
	if got := c.Invalidate(2); got != n/2 {
		t.Fatalf("Invalidate removed %d, want %d", got, n/2)
	}
	// The search scratch still holds the candidates of the first search,
	// positions up to n-1; only n/2 vectors are left.
	if _, err := c.Get("t", "something else entirely", base, 2); err != nil {
		t.Fatalf("Get after Invalidate: %v", err)
	}
}
