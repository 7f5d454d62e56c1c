package main

import (
	"context"
	"strings"
	"testing"
)

// TestDrillSpeedNaNIsUsageError: --speed must be a positive number; NaN
// slipped past the check and failed later, exit 1, naming rate_limit
// fields the user never wrote.
func TestDrillSpeedNaNIsUsageError(t *testing.T) {
	for _, speed := range []string{"NaN", "0", "-1"} {
		code, _, stderr := runCLI(context.Background(), nil, "drill", "--scenario", "../../testdata/scenarios/primary-outage.yaml",
			"--out", t.TempDir(), "--speed", speed)
		if code != exitUsage || !strings.Contains(stderr, "--speed") {
			t.Errorf("--speed %s: exit %d, stderr %q; want exit 2 naming --speed", speed, code, stderr)
		}
	}
}
