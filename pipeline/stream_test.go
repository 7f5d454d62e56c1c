package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
	"go.uber.org/goleak"
)

// TestStreamPanicIsAnError: a panic in a streamed question's run outside
// a tier call is returned as an error, as Ask returns it.
func TestStreamPanicIsAnError(t *testing.T) {
	miss := tier("memory", tiers.SourceCache, func(context.Context, tiers.Query) (tiers.Answer, error) {
		return tiers.Answer{}, &tiers.Error{Kind: tiers.KindMiss, Tier: "memory"}
	})
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{{Tier: panickyRememberer{miss}}, {Tier: tiers.NewStatic("static", "sorry")}}})
	res, err := p.Stream(context.Background(), tiers.Query{Tenant: "acme", Question: "q"}, func(StreamEvent) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "remember exploded") || res != nil {
		t.Fatalf("res %+v, err %v", res, err)
	}
}

// TestStreamReceiverPanicStopsTheStream: a panic in Stream's fn while a
// model streams is the receiver's error: the stream stops, Stream returns
// it with its stack, the model's breaker hears no failure and no other
// model is called.
func TestStreamReceiverPanicStopsTheStream(t *testing.T) {
	r := newStreamRig(t, StreamConfig{}, nil)
	res, err := r.p.Stream(context.Background(), streamQuery(), func(e StreamEvent) error {
		if e.Kind == StreamDelta {
			panic("receiver exploded")
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "receiver exploded") || res != nil {
		t.Fatalf("res %+v, err %v", res, err)
	}
	if got := r.modelCounts(streamA); got != "0/0" && got != "0/1" { // 0/1: the run ended first, a success
		t.Errorf("model a's breaker heard %s (failures/calls) for the receiver's panic", got)
	}
	if n := r.srv.Stats(streamB).StreamCalls; n != 0 {
		t.Errorf("model b was called %d times", n)
	}
}

// Models and timings of the stream rig.
const (
	streamA     = "a" // the primary tier's model
	streamB     = "b" // the fallback tier's model
	streamWait  = 60 * time.Millisecond
	streamQuest = "How do I return an item?"
)

// streamRig is a pipeline cache -> primary [a] -> fallback [b] ->
// retrieval -> static over an llmtest server, the cache a fake that
// records what it is asked to remember.
type streamRig struct {
	srv   *llmtest.Server
	p     *Pipeline
	cache *memoCache
}

// memoCache is a cache tier that always misses and records Remember.
type memoCache struct {
	mu   sync.Mutex
	seen []tiers.Answer
}

func (m *memoCache) Name() string         { return "cache" }
func (m *memoCache) Source() tiers.Source { return tiers.SourceCache }
func (m *memoCache) Answer(context.Context, tiers.Query) (tiers.Answer, error) {
	return tiers.Answer{}, &tiers.Error{Kind: tiers.KindMiss, Tier: "cache"}
}
func (m *memoCache) Remember(_ context.Context, _ tiers.Query, a tiers.Answer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen = append(m.seen, a)
}
func (m *memoCache) remembered() int { m.mu.Lock(); defer m.mu.Unlock(); return len(m.seen) }

func newStreamRig(t testing.TB, sc StreamConfig, upstream func(http.Handler) http.Handler) *streamRig {
	t.Helper()
	srv := llmtest.New(llmtest.Config{Models: []string{streamA, streamB}})
	var h http.Handler = srv
	if upstream != nil {
		h = upstream(srv)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	t.Cleanup(srv.Close) // runs first: releases hung handlers
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	client := tiers.NewClient(tiers.ClientConfig{BaseURL: hs.URL + "/v1", APIKey: "k", HTTPClient: hc})
	br := breaker.Config{FailureThreshold: 1000}
	llm := func(name string, src tiers.Source, id string) tiers.Tier {
		return tiers.NewLLM(tiers.LLMConfig{Name: name, Source: src, Retriever: testKB, ContextDocs: 1,
			Candidates: []tiers.Candidate{{ID: id, Client: client}}})
	}
	c := &memoCache{}
	p, err := New(Options{
		RequestTimeout: 3 * time.Second,
		Clock:          clock.NewManual(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
		Tiers: []Stage{
			{Tier: c, Timeout: 100 * time.Millisecond},
			{Tier: llm("primary", tiers.SourcePrimary, streamA), Model: true, Timeout: time.Second, Breaker: br, Stream: sc},
			{Tier: llm("fallback", tiers.SourceFallback, streamB), Model: true, Timeout: time.Second, Breaker: br, Stream: sc},
			{Tier: tiers.NewRetrieval(tiers.RetrievalConfig{Retriever: testKB, TopK: 1}), Timeout: 100 * time.Millisecond},
			{Tier: tiers.NewStatic("static", "")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return &streamRig{srv: srv, p: p, cache: c}
}

// events collects a stream's events.
type events struct{ list []StreamEvent }

func (ev *events) add(e StreamEvent) error { ev.list = append(ev.list, e); return nil }

// summary writes the events compactly, a run of deltas as "delta×N":
// "meta(primary/a) delta×3 note done(primary,interrupted)".
func (ev *events) summary() string {
	var parts []string
	for i := 0; i < len(ev.list); i++ {
		e := ev.list[i]
		switch e.Kind {
		case StreamMeta:
			s := "meta(" + string(e.Source)
			if e.Model != "" {
				s += "/" + e.Model
			}
			if e.Continued {
				s += ",continued"
			}
			parts = append(parts, s+")")
		case StreamDelta:
			n := 1
			for i+1 < len(ev.list) && ev.list[i+1].Kind == StreamDelta {
				n++
				i++
			}
			parts = append(parts, fmt.Sprintf("delta×%d", n))
		case StreamNote:
			parts = append(parts, "note")
		case StreamDone:
			s := "done(" + string(e.Result.Source)
			if e.Result.Interrupted {
				s += ",interrupted"
			}
			parts = append(parts, s+")")
		}
	}
	return strings.Join(parts, " ")
}

// text returns the deltas joined.
func (ev *events) text() string {
	var b strings.Builder
	for _, e := range ev.list {
		if e.Kind == StreamDelta {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// modelCounts returns the calls and failures model/id's breaker counted.
func (r *streamRig) modelCounts(id string) string {
	b, ok := r.p.Breakers().Lookup("model/" + id)
	if !ok {
		return "none"
	}
	s := b.Snapshot()
	return fmt.Sprintf("%d/%d", s.Failures, s.Calls)
}

// streamCase is one fault of the primary model and what the stream must
// show for it.
type streamCase struct {
	name   string
	fault  llmtest.Fault
	commit int           // StreamConfig.CommitAfter
	hold   time.Duration // StreamConfig.CommitAfterDuration
	note   string        // the event summary with on_stream_break: note
	cont   string        // ... with on_stream_break: continue
	aFail  string        // model/a breaker "failures/calls"
	bCalls int64         // stream calls that reached b (note mode; continue mode for cont)
	bCont  int64
}

const (
	viaFallback         = "meta(fallback/b) delta×%d done(fallback)"
	viaFallbackBuffered = "meta(fallback/b) delta×1 done(fallback)"
	brokeNote           = "meta(primary/a) delta×3 note done(primary,interrupted)"
	brokeCont           = "meta(primary/a) delta×3 meta(fallback/b,continued) delta×%d done(fallback)"
)

var streamCases = []streamCase{
	{name: "hang before the first token", fault: llmtest.Fault{Mode: llmtest.ModeHang},
		note: viaFallback, cont: viaFallback, aFail: "1/1", bCalls: 1, bCont: 1},
	{name: "5xx before the stream", fault: llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503},
		note: viaFallback, cont: viaFallback, aFail: "1/1", bCalls: 1, bCont: 1},
	{name: "connection reset", fault: llmtest.Fault{Mode: llmtest.ModeReset},
		note: viaFallback, cont: viaFallback, aFail: "1/1", bCalls: 1, bCont: 1},
	{name: "break before the first chunk", fault: llmtest.Fault{Mode: llmtest.ModeBreak},
		note: viaFallback, cont: viaFallback, aFail: "1/1", bCalls: 1, bCont: 1},
	{name: "stall before the first chunk", fault: llmtest.Fault{Mode: llmtest.ModeStall},
		note: viaFallback, cont: viaFallback, aFail: "1/1", bCalls: 1, bCont: 1},
	{name: "malformed first chunk", fault: llmtest.Fault{Mode: llmtest.ModeMalformed},
		note: viaFallback, cont: viaFallback, aFail: "1/1", bCalls: 1, bCont: 1},
	{name: "break after 3 chunks", fault: llmtest.Fault{Mode: llmtest.ModeBreak, After: 3},
		note: brokeNote, cont: brokeCont, aFail: "1/1", bCalls: 0, bCont: 1},
	{name: "stall after 3 chunks", fault: llmtest.Fault{Mode: llmtest.ModeStall, After: 3},
		note: brokeNote, cont: brokeCont, aFail: "1/1", bCalls: 0, bCont: 1},
	{name: "malformed chunk after 3", fault: llmtest.Fault{Mode: llmtest.ModeMalformed, After: 3},
		note: brokeNote, cont: brokeCont, aFail: "1/1", bCalls: 0, bCont: 1},
	// The whole of b's answer fits in the commit buffer: one delta at its end.
	{name: "break inside the commit buffer", fault: llmtest.Fault{Mode: llmtest.ModeBreak, After: 3}, commit: 1000,
		note: viaFallbackBuffered, cont: viaFallbackBuffered, aFail: "1/1", bCalls: 1, bCont: 1},
	{name: "stall inside the commit buffer", fault: llmtest.Fault{Mode: llmtest.ModeStall, After: 3}, commit: 1000,
		note: viaFallbackBuffered, cont: viaFallbackBuffered, aFail: "1/1", bCalls: 1, bCont: 1},
	// The same with a time buffer (commit_after_duration): a's break comes
	// within it, b's whole answer too.
	{name: "break inside the commit time", fault: llmtest.Fault{Mode: llmtest.ModeBreak, After: 3}, hold: time.Minute,
		note: viaFallbackBuffered, cont: viaFallbackBuffered, aFail: "1/1", bCalls: 1, bCont: 1},
	{name: "stall inside the commit time", fault: llmtest.Fault{Mode: llmtest.ModeStall, After: 3}, hold: time.Minute,
		note: viaFallbackBuffered, cont: viaFallbackBuffered, aFail: "1/1", bCalls: 1, bCont: 1},
	{name: "malformed inside the commit time", fault: llmtest.Fault{Mode: llmtest.ModeMalformed, After: 3}, hold: time.Minute,
		note: viaFallbackBuffered, cont: viaFallbackBuffered, aFail: "1/1", bCalls: 1, bCont: 1},
	{name: "no fault, ends inside the commit time", hold: time.Minute,
		note: "meta(primary/a) delta×1 done(primary)", cont: "meta(primary/a) delta×1 done(primary)", aFail: "0/1"},
	{name: "no fault", note: "meta(primary/a) delta×%d done(primary)", cont: "meta(primary/a) delta×%d done(primary)",
		aFail: "0/1"},
}

func TestStreamFaults(t *testing.T) {
	for _, mode := range []string{"note", "continue"} {
		for _, tc := range streamCases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				want, bCalls := tc.note, tc.bCalls
				if mode == "continue" {
					want, bCalls = tc.cont, tc.bCont
				}
				r := newStreamRig(t, StreamConfig{FirstTokenTimeout: streamWait, StallTimeout: streamWait,
					CommitAfter: tc.commit, CommitAfterDuration: tc.hold, ContinueOnBreak: mode == "continue"}, nil)
				r.srv.SetFault(streamA, tc.fault)
				var ev events
				res, err := r.p.Stream(context.Background(), tiers.Query{Tenant: "t", Question: streamQuest}, ev.add)
				if err != nil {
					t.Fatal(err)
				}
				sa, sb := r.srv.Stats(streamA), r.srv.Stats(streamB)
				if strings.Contains(want, "%d") {
					// The deltas of a whole answer: one per chunk of the model that finished it.
					last := sa.Chunks
					if bCalls > 0 {
						last = sb.Chunks
					}
					want = fmt.Sprintf(want, last)
				}
				if got := ev.summary(); got != want {
					t.Fatalf("events\n got %s\nwant %s\n(attempts %v)", got, want, outcomes(res))
				}
				if d := ev.list[len(ev.list)-1]; d.Result != res || ev.text() != res.Text {
					t.Fatalf("done result %p vs %p; deltas %q vs answer %q", d.Result, res, ev.text(), res.Text)
				}
				if got := r.modelCounts(streamA); got != tc.aFail {
					t.Errorf("model/a breaker failures/calls = %s, want %s", got, tc.aFail)
				}
				wantB := "none"
				if bCalls > 0 {
					wantB = "0/1"
				}
				if got := r.modelCounts(streamB); got != wantB && !(wantB == "none" && got == "0/0") {
					t.Errorf("model/b breaker = %s, want %s", got, wantB)
				}
				if sa.StreamCalls != 1 || sb.StreamCalls != bCalls || sa.Calls != sa.StreamCalls || sb.Calls != sb.StreamCalls {
					t.Errorf("upstream calls a=%+v b=%+v, want 1 and %d streamed", sa, sb, bCalls)
				}
				cached := 1 // the cache is offered every whole answer, never an interrupted or stitched one
				if strings.Contains(want, "interrupted") || strings.Contains(want, "continued") {
					cached = 0
				}
				if r.cache.remembered() != cached {
					t.Errorf("remembered %d answers, want %d", r.cache.remembered(), cached)
				}
				if res.Interrupted != strings.Contains(want, "interrupted") {
					t.Errorf("Interrupted = %v", res.Interrupted)
				}
			})
		}
	}
}

func streamQuery() tiers.Query { return tiers.Query{Tenant: "t", Question: streamQuest} }

func TestStreamContinueStitchesTheAnswer(t *testing.T) {
	rec := &recorder{}
	r := newStreamRig(t, StreamConfig{StallTimeout: streamWait, ContinueOnBreak: true,
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
	r := newStreamRig(t, StreamConfig{StallTimeout: streamWait, ContinueOnBreak: true}, nil)
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
	if ev.list[4].Text != interruptedNote["en"] || !res.Interrupted || res.Source != tiers.SourcePrimary {
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
	if n := ev.list[len(ev.list)-2]; n.Kind != StreamNote || n.Text != interruptedNote["zh"] {
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
	// The run may have ended before it heard the receiver was gone: the
	// model's answer then counts as the success it was.
	if r.modelCounts(streamA) != "0/0" && r.modelCounts(streamA) != "0/1" || r.srv.Stats(streamB).Calls != 0 {
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

// filteredMidStream answers model a's streamed calls with three chunks of
// text and then a stop for content_filter, as a provider whose filter
// flags an answer part-way does; other calls go on to next.
func filteredMidStream(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil || !bytes.Contains(body, []byte(`"model":"`+streamA+`"`)) {
			req.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, req)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := `data: {"id":"f","object":"chat.completion.chunk","model":"` + streamA + `","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}` + "\n\n"
		for _, text := range []string{`"Items "`, `"can be "`, `"returned "`} {
			fmt.Fprintf(w, chunk, `{"content":`+text+`}`, "null")
		}
		fmt.Fprintf(w, chunk, `{}`, `"content_filter"`)
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
}

// TestStreamContentFilterAfterCommitIsNotContinued: a model that stops for
// its content filter after part of the answer was sent refused the
// content, it did not break. The answer ends there with the interruption
// note, even with on_stream_break: continue: handing the flagged text to
// the next model to carry on would get round the filter. Like a content
// filter before commit, it does not count against the model's breaker.
func TestStreamContentFilterAfterCommitIsNotContinued(t *testing.T) {
	r := newStreamRig(t, StreamConfig{StallTimeout: streamWait, ContinueOnBreak: true}, filteredMidStream)
	var ev events
	res, err := r.p.Stream(context.Background(), streamQuery(), ev.add)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ev.summary(), "meta(primary/a) delta×3 note done(primary,interrupted)"; got != want {
		t.Fatalf("events %s, want %s (attempts %v)", got, want, outcomes(res))
	}
	if res.Text != "Items can be returned " || !res.Interrupted || res.Source != tiers.SourcePrimary {
		t.Errorf("result %q from %s, interrupted %v", res.Text, res.Source, res.Interrupted)
	}
	if got, want := outcomes(res), []string{"cache:miss", "primary/a:content_filter"}; !slices.Equal(got, want) {
		t.Errorf("attempts %v, want %v", got, want)
	}
	if n := r.srv.Stats(streamB).StreamCalls; n != 0 {
		t.Errorf("the fallback model was asked %d times to continue a filtered answer", n)
	}
	if got := r.modelCounts(streamA); got != "0/0" {
		t.Errorf("model/a breaker counts %s, want 0/0 (a content filter is ignored)", got)
	}
}

// TestStreamBreakAfterCommitTime: a sends three chunks, then waits; the
// commit time (commit_after_duration) passes with no further chunk and
// commits the held text as one delta; a then cuts the connection. The
// answer ends with the interruption note, and b is never called.
func TestStreamBreakAfterCommitTime(t *testing.T) {
	rec := &recorder{}
	// The stall timeout only bounds the wait should the time never commit.
	r := newStreamRig(t, StreamConfig{StallTimeout: 2 * time.Second, CommitAfterDuration: 100 * time.Millisecond,
		ContinueOnBreak: false}, nil) // the partial answer and the note
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
	if n := ev.list[2]; n.Text != interruptedNote["en"] || !res.Interrupted || res.Text != ev.text() || res.Source != "primary" {
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
