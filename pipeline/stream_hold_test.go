package pipeline

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// TestStreamBreakAfterCommitTime: a sends three chunks, then waits; the
// commit time (commit_after_duration) passes with no further chunk and
// commits the held text as one delta; a then cuts the connection. The
// answer ends with the interruption note, and b is never called.
func TestStreamBreakAfterCommitTime(t *testing.T) {
	rec := &recorder{}
	// The stall timeout only bounds the wait should the time never commit.
	r := newStreamRig(t, StreamConfig{StallTimeout: 2 * time.Second, CommitAfterDuration: 100 * time.Millisecond,
		OnStreamBreak: OnStreamBreakNote}, nil)
	r.p.obs = rec
	r.srv.SetFault(streamA, llmtest.Fault{Mode: llmtest.ModeBreak, After: 3})
	release := r.srv.HoldBreaks()
	t.Cleanup(release)
	var ev events
	res, err := r.p.Stream(context.Background(), streamQuery(), func(e StreamEvent) error {
		if e.Kind == StreamDelta {
			release() // the text is out: now a breaks
		}
		return ev.add(e)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.summary(); got != brokeNoteHeld {
		t.Fatalf("events\n got %s\nwant %s\n(attempts %v)", got, brokeNoteHeld, outcomes(res))
	}
	if n := ev.list[2]; n.Text != InterruptedNote["en"] || !res.Interrupted || res.Text != ev.text() || res.Source != "primary" {
		t.Fatalf("note %q, result %+v", n.Text, res)
	}
	if got, want := outcomes(res), []string{"cache:miss", "primary/a:interrupted"}; !slices.Equal(got, want) {
		t.Fatalf("attempts %v, want %v", got, want)
	}
	if got := r.modelCounts(streamA); got != "1/1" {
		t.Errorf("model/a breaker failures/calls = %s, want 1/1", got)
	}
	if got := r.modelCounts(streamB); got != "none" && got != "0/0" {
		t.Errorf("model/b breaker = %s", got)
	}
	if sa, sb := r.srv.Stats(streamA), r.srv.Stats(streamB); sa.StreamCalls != 1 || sa.Chunks != 3 || sb.Calls != 0 {
		t.Errorf("upstream a=%+v b=%+v", sa, sb)
	}
	if r.cache.remembered() != 0 {
		t.Error("an interrupted answer was offered to the cache")
	}
	var wasted int
	for _, e := range rec.kinds(EventAttempt) {
		if e.Attempt.Model == streamA {
			wasted = e.Attempt.Usage.CompletionTokens
		}
	}
	if wasted != 3 {
		t.Errorf("the interrupted attempt spent %d tokens, want 3", wasted)
	}
}

const brokeNoteHeld = "meta(primary/a) delta×1 note done(primary,interrupted)"
