package pipeline

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// cutGate holds the upstream's connection cuts (llmtest's ModeBreak
// hijacks the connection) until open is called or the request ends.
type cutGate struct {
	once sync.Once
	ch   chan struct{}
}

func newCutGate(t *testing.T) *cutGate {
	g := &cutGate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *cutGate) open() { g.once.Do(func() { close(g.ch) }) }

func (g *cutGate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(gatedWriter{ResponseWriter: w, gate: g.ch, done: r.Context().Done()}, r)
	})
}

type gatedWriter struct {
	http.ResponseWriter
	gate, done <-chan struct{}
}

func (w gatedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w gatedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	select {
	case <-w.gate:
	case <-w.done:
	}
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// TestStreamBreakAfterCommitTime: a sends three chunks, then waits; the
// commit time (commit_after_duration) passes with no further chunk and
// commits the held text as one delta; a then cuts the connection. The
// answer ends with the interruption note, and b is never called.
func TestStreamBreakAfterCommitTime(t *testing.T) {
	gate := newCutGate(t)
	rec := &recorder{}
	// The stall timeout only bounds the wait should the time never commit.
	r := newStreamRig(t, StreamConfig{StallTimeout: 2 * time.Second, CommitAfterDuration: 100 * time.Millisecond,
		OnStreamBreak: OnStreamBreakNote}, gate.wrap)
	r.p.obs = rec
	r.srv.SetFault(streamA, llmtest.Fault{Mode: llmtest.ModeBreak, After: 3})
	var ev events
	res, err := r.p.Stream(context.Background(), streamQuery(), func(e StreamEvent) error {
		if e.Kind == StreamDelta {
			gate.open() // the text is out: now a breaks
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
