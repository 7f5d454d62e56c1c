package tiers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// holdTime is a hold long enough to outlast any test stream.
const holdTime = time.Minute

// heldStream streams "how do returns work" from candidates a, b of srv
// with the given request and returns the answer, its error, the deltas
// and the guard's log.
func heldStream(t *testing.T, url string, req StreamRequest) (Answer, error, *deltaLog, string) {
	t.Helper()
	log := &deltaLog{}
	if req.Emit == nil {
		req.Emit = log.emit
	}
	g := &recordingGuard{}
	l := NewLLM(LLMConfig{Name: "primary", Candidates: []Candidate{candidate("a", url), candidate("b", url)}})
	a, err := l.AnswerStream(context.Background(), Query{Question: "how do returns work", Guard: g}, req)
	return a, err, log, strings.Join(g.log, " ")
}

func TestAnswerStreamHeldByTime(t *testing.T) {
	tests := []struct {
		name  string
		fault llmtest.Fault
		req   StreamRequest
		model string // the model that answers
		each  bool   // one delta per chunk, not the whole answer as one
		guard string
	}{
		{name: "ends within the time: delivered whole", req: StreamRequest{CommitAfterDuration: holdTime},
			model: "a", guard: "a:ok"},
		{name: "break within the time fails over invisibly", fault: llmtest.Fault{Mode: llmtest.ModeBreak, After: 3},
			req: StreamRequest{CommitAfterDuration: holdTime}, model: "b", guard: "a:connection b:ok"},
		{name: "stall within the time fails over invisibly", fault: llmtest.Fault{Mode: llmtest.ModeStall, After: 3},
			req: StreamRequest{CommitAfterDuration: holdTime, StallTimeout: 40 * time.Millisecond}, model: "b", guard: "a:timeout b:ok"},
		{name: "malformed within the time fails over invisibly", fault: llmtest.Fault{Mode: llmtest.ModeMalformed, After: 3},
			req: StreamRequest{CommitAfterDuration: holdTime}, model: "b", guard: "a:malformed b:ok"},
		{name: "characters before the time: commit_after comes first", req: StreamRequest{CommitAfter: 1, CommitAfterDuration: holdTime},
			model: "a", each: true, guard: "a:ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := streamUpstream(t)
			want := fullAnswer(t, srv, tt.model)
			srv.ResetStats()
			srv.SetFault("a", tt.fault)
			a, err, log, guard := heldStream(t, srv.URL, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if a.Model != tt.model || a.Text != want || log.text() != want || a.Interrupted {
				t.Fatalf("answer %+v, emitted %q, want %q", a, log.text(), want)
			}
			deltas := 1
			if tt.each {
				deltas = int(srv.Stats(tt.model).Chunks)
			}
			if log.len() != deltas {
				t.Fatalf("%d deltas, want %d", log.len(), deltas)
			}
			for _, d := range log.deltas {
				if d.Model != tt.model {
					t.Fatalf("delta from %q reached the caller", d.Model)
				}
			}
			if guard != tt.guard {
				t.Fatalf("guard log %q, want %q", guard, tt.guard)
			}
			wantB := int64(0)
			if tt.model == "b" {
				wantB = 1
			}
			if sa, sb := srv.Stats("a"), srv.Stats("b"); sa.StreamCalls != 1 || sb.StreamCalls != wantB {
				t.Fatalf("stream calls a=%d b=%d", sa.StreamCalls, sb.StreamCalls)
			}
		})
	}
}

// TestAnswerStreamCommitsWhenTheTimeIsUp holds three chunks while the
// model waits: the hold time commits them as one delta with no further
// chunk coming, and the break the model makes only after that ends the
// answer interrupted, without trying b.
func TestAnswerStreamCommitsWhenTheTimeIsUp(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  StreamRequest
	}{
		{"time only", StreamRequest{CommitAfterDuration: 100 * time.Millisecond}},
		{"time before characters", StreamRequest{CommitAfterDuration: 100 * time.Millisecond, CommitAfter: 100000}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.StallTimeout = 2 * time.Second // bounds the wait should the time never commit
			srv := streamUpstream(t)
			srv.SetFault("a", llmtest.Fault{Mode: llmtest.ModeBreak, After: 3})
			release := srv.HoldBreaks()
			t.Cleanup(release)
			log := &deltaLog{}
			tt.req.Emit = func(d Delta) error { release(); return log.emit(d) } // the model breaks once the text is out
			a, err, _, guard := heldStream(t, srv.URL, tt.req)
			var te *Error
			if !errors.As(err, &te) || te.Kind != KindInterrupted || KindOf(te.Err) != KindConnection {
				t.Fatalf("err = %v, want interrupted by a connection error", err)
			}
			if !a.Interrupted || a.Model != "a" || log.len() != 1 || a.Text != log.text() || !strings.HasPrefix(a.Text, "[a] ") {
				t.Fatalf("answer %+v, %d deltas %q", a, log.len(), log.text())
			}
			if te.Usage.CompletionTokens != 3 || srv.Stats("a").Chunks != 3 {
				t.Fatalf("usage %+v, stats %+v", te.Usage, srv.Stats("a"))
			}
			if guard != "a:interrupted" || srv.Stats("b").Calls != 0 {
				t.Fatalf("guard log %q, b calls %d", guard, srv.Stats("b").Calls)
			}
		})
	}
}

// TestAnswerStreamHeldReceiverGone: an Emit error when the hold time
// commits ends the stream at once, as a cancellation.
func TestAnswerStreamHeldReceiverGone(t *testing.T) {
	srv := streamUpstream(t)
	srv.SetFault("a", llmtest.Fault{Mode: llmtest.ModeStall, After: 2}) // would stall forever
	gone := errors.New("client went away")
	a, err, _, guard := heldStream(t, srv.URL, StreamRequest{CommitAfterDuration: 20 * time.Millisecond,
		StallTimeout: 2 * time.Second, Emit: func(Delta) error { return gone }})
	if KindOf(err) != KindCanceled || !errors.Is(err, gone) || !a.Interrupted {
		t.Fatalf("err=%v answer=%+v", err, a)
	}
	if guard != "a:canceled" || srv.Stats("b").Calls != 0 {
		t.Fatalf("guard log %q, b calls %d", guard, srv.Stats("b").Calls)
	}
}
