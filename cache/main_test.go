package cache

import (
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/clock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// manualClock is the project's clock, moved by hand.
type manualClock = clock.Manual

func newManualClock() *manualClock {
	return clock.NewManual(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))
}
