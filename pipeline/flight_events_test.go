package pipeline

import (
	"runtime"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

// joined reports whether a second caller has joined the flight of key.
func (g *flightGroup) joined(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.m[key]
	return f != nil && f.done != nil
}

// TestSharedAnswerIsReported: a question answered by joining an identical
// question's flight was answered too: the Observer hears an EventAnswered
// for it (its Result marked Shared), so that metrics count every question
// answered, not every run.
func TestSharedAnswerIsReported(t *testing.T) {
	fn, entered, release := gate("one")
	primary := tier("primary", tiers.SourcePrimary, fn)
	rec := &recorder{}
	p, _ := newTestPipeline(t, Options{Observer: rec, Tiers: []Stage{{Tier: primary, Model: true}}})

	resc := make(chan *Result, 2)
	go func() { resc <- ask(t, p, "where is my order") }()
	<-entered
	go func() { resc <- ask(t, p, "Where is my order") }()
	deadline := time.Now().Add(5 * time.Second)
	for !p.flights.joined(flightKey("acme", "where is my order", false)) {
		if time.Now().After(deadline) {
			t.Fatal("the second question never joined the flight")
		}
		runtime.Gosched()
	}
	close(release)
	a, b := <-resc, <-resc
	if a.Shared == b.Shared {
		t.Fatalf("shared = %v and %v, want one of each", a.Shared, b.Shared)
	}
	ans := rec.kinds(EventAnswered)
	if len(ans) != 2 {
		t.Fatalf("%d EventAnswered for 2 questions answered, want 2", len(ans))
	}
	shared := 0
	for _, e := range ans {
		if e.Tenant != "acme" || e.Result == nil || e.Result.Text != "one" {
			t.Fatalf("answered event %+v", e)
		}
		if e.Result.Shared {
			shared++
		}
	}
	if shared != 1 {
		t.Fatalf("%d answered events carry a shared result, want 1", shared)
	}
	if att := rec.kinds(EventAttempt); len(att) != 1 {
		t.Fatalf("%d attempt events, want 1 (the follower made none)", len(att))
	}
}
