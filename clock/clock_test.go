package clock_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/clock"
)

func ExampleManual() {
	c := clock.NewManual(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	c.Advance(90 * time.Second)
	fmt.Println(c.Now().Format("15:04:05"))
	// Output: 09:01:30
}

func TestManual(t *testing.T) {
	var zero clock.Manual
	if !zero.Now().IsZero() {
		t.Fatalf("zero Manual reads %v, want the zero time", zero.Now())
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := clock.NewManual(t0)
	if got := c.Advance(-time.Minute); !got.Equal(t0.Add(-time.Minute)) {
		t.Fatalf("Advance(-1m) = %v", got)
	}
	c.Set(t0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.Advance(time.Millisecond)
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), t0.Add(8*time.Second); !got.Equal(want) {
		t.Fatalf("after concurrent advances: %v, want %v", got, want)
	}
}

func TestSystem(t *testing.T) {
	before := time.Now()
	got := clock.System.Now()
	if got.Before(before) || got.Sub(before) > time.Minute {
		t.Fatalf("System.Now() = %v, want about %v", got, before)
	}
}
