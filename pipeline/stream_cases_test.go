package pipeline

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

func streamQuery() tiers.Query { return tiers.Query{Tenant: "t", Question: streamQuest} }

func TestStreamContinueStitchesTheAnswer(t *testing.T) {
	rec := &recorder{}
	r := newStreamRig(t, StreamConfig{StallTimeout: streamWait, OnStreamBreak: OnStreamBreakContinue,
		ContinuePrompt: "Carry on from: {partial}"}, nil)
	r.p.obs = rec
	r.srv.SetFault(streamA, llmtest.Fault{Mode: llmtest.ModeBreak, After: 3})
	var ev events
	res, err := r.p.Stream(context.Background(), streamQuery(), ev.add)
	if err != nil {
		t.Fatal(err)
	}
	first := ev.list[1].Text + ev.list[2].Text + ev.list[3].Text
	if !strings.HasPrefix(first, "[a] ") || !strings.HasPrefix(res.Text, first+"[b] ") || res.Text != ev.text() {
		t.Fatalf("stitched answer %q (first part %q)", res.Text, first)
	}
	// llmtest echoes the prompt after "Question:": the continuation prompt is there.
	if !strings.Contains(res.Text, "Carry on from: [a]") {
		t.Fatalf("the continuation prompt did not reach b: %q", res.Text)
	}
	if res.Source != tiers.SourceFallback || res.Model != streamB || res.Interrupted || !res.Degraded {
		t.Fatalf("result %+v", res)
	}
	if got, want := outcomes(res), []string{"cache:miss", "primary/a:interrupted", "fallback/b:success"}; !slices.Equal(got, want) {
		t.Fatalf("attempts %v, want %v", got, want)
	}
	// The interrupted attempt's tokens count as wasted; the answer's usage
	// sums both models.
	var wasted tiers.Usage
	for _, e := range rec.kinds(EventAttempt) {
		if e.Attempt.Model == streamA {
			wasted = e.Attempt.Usage
		}
	}
	if wasted.CompletionTokens != 3 || res.Usage.CompletionTokens != 3+int(r.srv.Stats(streamB).CompletionTokens) {
		t.Fatalf("wasted %+v, answer usage %+v, b stats %+v", wasted, res.Usage, r.srv.Stats(streamB))
	}
	if r.cache.remembered() != 0 {
		t.Fatal("a stitched answer was cached")
	}
}

func TestStreamContinueFailsThenNotes(t *testing.T) {
	r := newStreamRig(t, StreamConfig{StallTimeout: streamWait, OnStreamBreak: OnStreamBreakContinue}, nil)
	r.srv.SetFault(streamA, llmtest.Fault{Mode: llmtest.ModeStall, After: 3})
	r.srv.SetFault(streamB, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
	var ev events
	res, err := r.p.Stream(context.Background(), streamQuery(), ev.add)
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.summary(); got != brokeNote {
		t.Fatalf("events %s", got)
	}
	if ev.list[4].Text != InterruptedNote["en"] || !res.Interrupted || res.Source != tiers.SourcePrimary {
		t.Fatalf("note %q, result %+v", ev.list[4].Text, res)
	}
	if r.modelCounts(streamB) != "1/1" || r.srv.Stats(streamB).StreamCalls != 1 {
		t.Fatalf("b breaker %s, stats %+v", r.modelCounts(streamB), r.srv.Stats(streamB))
	}
	// Neither retrieval nor static may end an answer that has begun.
	if got := outcomes(res); len(got) != 3 {
		t.Fatalf("attempts %v", got)
	}
}

func TestStreamNonModelTierIsOneDelta(t *testing.T) {
	r := newStreamRig(t, StreamConfig{}, nil)
	r.srv.SetFault(llmtest.AnyModel, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
	var ev events
	res, err := r.p.Stream(context.Background(), streamQuery(), ev.add)
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.summary(); got != "meta(retrieval) delta×1 done(retrieval)" || ev.text() != res.Text || res.Text == "" {
		t.Fatalf("events %s, text %q", got, ev.text())
	}
}

func TestStreamChineseNote(t *testing.T) {
	r := newStreamRig(t, StreamConfig{}, nil)
	r.srv.SetFault(streamA, llmtest.Fault{Mode: llmtest.ModeBreak, After: 2})
	var ev events
	if _, err := r.p.Stream(context.Background(), tiers.Query{Tenant: "t", Question: "怎么退货？"}, ev.add); err != nil {
		t.Fatal(err)
	}
	if n := ev.list[len(ev.list)-2]; n.Kind != StreamNote || n.Text != InterruptedNote["zh"] {
		t.Fatalf("note %+v", n)
	}
}

// TestStreamClientDisconnect cancels a stream mid-answer while the model
// would stall forever: the upstream request ends at once, the breakers
// hear nothing, no other model is called and no goroutine is left.
func TestStreamClientDisconnect(t *testing.T) {
	upstreamDone := make(chan struct{}, 4)
	r := newStreamRig(t, StreamConfig{}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			h.ServeHTTP(w, req)
			upstreamDone <- struct{}{}
		})
	})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r.srv.SetFault(streamA, llmtest.Fault{Mode: llmtest.ModeStall, After: 2}) // then forever
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ev events
	_, err := r.p.Stream(ctx, streamQuery(), func(e StreamEvent) error {
		_ = ev.add(e)
		if e.Kind == StreamDelta && len(ev.list) == 3 {
			cancel() // the client goes away after two deltas
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	select {
	case <-upstreamDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request did not end")
	}
	if got := ev.summary(); got != "meta(primary/a) delta×2" {
		t.Fatalf("events %s", got)
	}
	if r.modelCounts(streamA) != "0/0" || r.srv.Stats(streamB).Calls != 0 {
		t.Fatalf("model/a breaker %s, b calls %d", r.modelCounts(streamA), r.srv.Stats(streamB).Calls)
	}
	if s := r.p.Breakers().Snapshots(); len(s) == 0 {
		t.Fatal("no breakers")
	}
	for _, s := range r.p.Breakers().Snapshots() {
		if s.Failures != 0 {
			t.Fatalf("breaker %s counted a failure", s.Name)
		}
	}
}

func TestStreamReceiverErrorStops(t *testing.T) {
	r := newStreamRig(t, StreamConfig{}, nil)
	gone := errors.New("write: broken pipe")
	n := 0
	_, err := r.p.Stream(context.Background(), streamQuery(), func(e StreamEvent) error {
		n++
		if e.Kind == StreamDelta {
			return gone
		}
		return nil
	})
	if !errors.Is(err, gone) || n != 2 {
		t.Fatalf("err = %v after %d events", err, n)
	}
	if r.modelCounts(streamA) != "0/0" || r.srv.Stats(streamB).Calls != 0 || r.cache.remembered() != 0 {
		t.Fatalf("model/a %s, b calls %d", r.modelCounts(streamA), r.srv.Stats(streamB).Calls)
	}
}

func TestStreamRefusals(t *testing.T) {
	r := newStreamRig(t, StreamConfig{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	none := func(StreamEvent) error { t.Fatal("an event was sent"); return nil }
	if _, err := r.p.Stream(ctx, streamQuery(), none); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	_ = r.p.Close()
	if _, err := r.p.Stream(context.Background(), streamQuery(), none); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
	if r.srv.Stats(streamA).Calls != 0 {
		t.Fatal("a refused stream reached the model")
	}
}

func TestStreamRateLimitedModelCoolsDown(t *testing.T) {
	r := newStreamRig(t, StreamConfig{}, nil)
	r.srv.SetFault(streamA, llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: time.Minute})
	for i, want := range [][]string{
		{"cache:miss", "primary/a:rate_limited", "fallback/b:success"},
		{"cache:miss", "primary/a:cooling_down", "fallback/b:success"},
	} {
		var ev events
		res, err := r.p.Stream(context.Background(), streamQuery(), ev.add)
		if err != nil {
			t.Fatal(err)
		}
		if got := outcomes(res); !slices.Equal(got, want) || !strings.HasPrefix(ev.summary(), "meta(fallback/b) ") {
			t.Fatalf("stream %d: attempts %v, events %s", i, got, ev.summary())
		}
	}
	if r.srv.Stats(streamA).Calls != 1 || r.modelCounts(streamA) != "0/0" {
		t.Fatalf("a calls %d, breaker %s: a 429 is not a failure", r.srv.Stats(streamA).Calls, r.modelCounts(streamA))
	}
}
