package breaker_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
)

func TestRegistry(t *testing.T) {
	clk := clock.NewManual(t0)
	var changes []string
	var mu sync.Mutex
	r := breaker.NewRegistry(breaker.Config{
		Clock: clk, OpenDuration: time.Minute, FailureThreshold: 1,
		OnStateChange: func(name string, _, to breaker.State) {
			mu.Lock()
			defer mu.Unlock()
			changes = append(changes, name+">"+to.String())
		},
	})
	if _, ok := r.Lookup("a"); ok {
		t.Fatal("Lookup found a breaker never created")
	}
	a := r.Get("a")
	if r.Get("a") != a {
		t.Fatal("Get returned a second breaker for one name")
	}
	if got, ok := r.Lookup("a"); !ok || got != a {
		t.Fatal("Lookup did not find a")
	}
	c := r.GetWith("c", breaker.Config{FailureThreshold: 3})
	if c.Config().FailureThreshold != 3 || c.Config().Clock != clk || c.Config().OpenDuration != 30*time.Second {
		t.Fatalf("GetWith config = %+v", c.Config())
	}
	if r.GetWith("a", breaker.Config{FailureThreshold: 9}) != a || a.Config().FailureThreshold != 1 {
		t.Fatal("GetWith replaced or changed an existing breaker")
	}
	r.Get("b").Trip()
	c.Trip() // listener taken from the defaults

	var names []string
	for _, s := range r.Snapshots() {
		names = append(names, s.Name+":"+s.State.String())
	}
	if want := []string{"a:closed", "b:open", "c:open"}; !slices.Equal(names, want) {
		t.Fatalf("snapshots = %v, want %v", names, want)
	}
	if want := []string{"b>open", "c>open"}; !slices.Equal(changes, want) {
		t.Fatalf("changes = %v", changes)
	}
}

func TestRegistryConcurrentGet(t *testing.T) {
	r := breaker.NewRegistry(breaker.Config{})
	const n = 16
	got := make([]*breaker.Breaker, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i] = r.Get("same") })
	}
	wg.Wait()
	for _, b := range got {
		if b != got[0] {
			t.Fatal("concurrent Get created two breakers")
		}
	}
}
