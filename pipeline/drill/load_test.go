package drill

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestDriveTinyRate: a rate in range but so low that one interval
// overflows a time.Duration sends the first question alone, as a low
// rate does, instead of sending questions without end.
func TestDriveTinyRate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var n atomic.Int64
	results := drive(ctx, Load{Rate: 1e-10, Duration: 50 * time.Millisecond}, time.Now(), time.Second,
		func(context.Context, int) string { n.Add(1); return "primary" })
	if len(results) != 1 || n.Load() != 1 {
		t.Errorf("%d questions sent (%d results), want 1", n.Load(), len(results))
	}
}
