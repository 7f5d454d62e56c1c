package pipeline

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

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
	for _, mode := range []string{OnStreamBreakNote, OnStreamBreakContinue} {
		for _, tc := range streamCases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				want, bCalls := tc.note, tc.bCalls
				if mode == OnStreamBreakContinue {
					want, bCalls = tc.cont, tc.bCont
				}
				r := newStreamRig(t, StreamConfig{FirstTokenTimeout: streamWait, StallTimeout: streamWait,
					CommitAfter: tc.commit, CommitAfterDuration: tc.hold, OnStreamBreak: mode}, nil)
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
