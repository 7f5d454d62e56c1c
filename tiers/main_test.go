package tiers

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: streams and
// their watchdog timers must end with their calls.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
