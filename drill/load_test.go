package drill

import (
	"context"
	"strings"
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
		func(context.Context, int) outcome { n.Add(1); return outcome{source: "primary"} })
	if len(results) != 1 || n.Load() != 1 {
		t.Errorf("%d questions sent (%d results), want 1", n.Load(), len(results))
	}
}

// TestDriveTimesQuestionsFromWhenTheyWereDue: a driver that falls behind
// (here it starts 1.2s late, so the whole warm-up and the first 200 ms are
// overdue at once) stamps each question with the time it was due, not the
// time it got round to it: the overdue warm-up questions stay out of the
// measured window, the lag is part of the latencies, and the report warns.
// Stamped when asked, all 130 questions were measured.
func TestDriveTimesQuestionsFromWhenTheyWereDue(t *testing.T) {
	load := Load{Rate: 100, Warmup: time.Second, Duration: 300 * time.Millisecond}
	start := time.Now().Add(-load.Warmup - 200*time.Millisecond)
	results := drive(context.Background(), load, start, time.Second,
		func(context.Context, int) outcome { return outcome{source: "primary"} })
	cs := clockScale{zero: start.Add(load.Warmup), speed: 1}
	samples := cs.samples(results)
	r := summarize(&trace{setting: SettingFull, samples: samples}, nil)
	if r.Questions != 30 {
		t.Errorf("%d questions measured of %d sent, want the 30 due after the warm-up", r.Questions, len(results))
	}
	for _, s := range samples {
		if s.at == -load.Warmup && s.latency < 1100*time.Millisecond {
			t.Errorf("the first question, due 1.2s before it was asked, took %v: the lag is missing", s.latency)
		}
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[len(r.Warnings)-1], "fell behind") {
		t.Errorf("warnings = %q, want one saying the driver fell behind", r.Warnings)
	}
}
