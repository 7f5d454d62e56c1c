package cache

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ragfuse/ragfuse/breaker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// manualClock is the breaker package's clock moved by hand.
type manualClock = breaker.ManualClock

func newManualClock() *manualClock {
	return breaker.NewManualClock(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))
}
