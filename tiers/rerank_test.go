package tiers

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// TestRerankClientFaults calls the rerank API of llmtest under every fault
// mode: the scores when it answers, else an *Error of the Kind a chat call
// would get.
func TestRerankClientFaults(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{})
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := NewRerankClient(RerankClientConfig{BaseURL: srv.URL, Model: "rr", ID: "bge", HTTPClient: &http.Client{Transport: tr}})
	docs := []string{"shipping to Canada", "refund policy for returns"}
	want := map[llmtest.Mode]struct {
		fault llmtest.Fault
		kind  Kind
	}{
		llmtest.ModeOK:        {llmtest.Fault{}, ""},
		llmtest.ModeLatency:   {llmtest.Fault{Mode: llmtest.ModeLatency, Delay: 10 * time.Millisecond}, ""},
		llmtest.ModeHang:      {llmtest.Fault{Mode: llmtest.ModeHang}, KindTimeout},
		llmtest.ModeStatus:    {llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503}, KindServer},
		llmtest.ModeRateLimit: {llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: 3 * time.Second}, KindRateLimited},
		llmtest.ModeReset:     {llmtest.Fault{Mode: llmtest.ModeReset}, KindConnection},
		llmtest.ModeBreak:     {llmtest.Fault{Mode: llmtest.ModeBreak}, KindConnection},
		llmtest.ModeStall:     {llmtest.Fault{Mode: llmtest.ModeStall}, KindTimeout},
		llmtest.ModeMalformed: {llmtest.Fault{Mode: llmtest.ModeMalformed}, KindMalformed},
		llmtest.ModeEmpty:     {llmtest.Fault{Mode: llmtest.ModeEmpty}, KindEmpty},
	}
	for _, mode := range llmtest.Modes {
		tt, ok := want[mode]
		if !ok {
			t.Fatalf("no case for mode %s", mode)
		}
		t.Run(string(mode), func(t *testing.T) {
			srv.SetFault("rr", tt.fault)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			scores, err := c.Rerank(ctx, "what is the refund policy", docs)
			if tt.kind == "" {
				if err != nil || len(scores) != 2 || scores[0].Index != 1 || scores[0].Score <= scores[1].Score {
					t.Fatalf("got %v, %v; want the refund document first", scores, err)
				}
				return
			}
			var te *Error
			if !errors.As(err, &te) || te.Kind != tt.kind || te.Tier != "rerank" || te.Model != "bge" {
				t.Fatalf("got %v, %v; want an *Error of kind %s, tier rerank, model bge", scores, err, tt.kind)
			}
			if mode == llmtest.ModeRateLimit && te.RetryAfter != 3*time.Second {
				t.Errorf("RetryAfter = %v, want 3s", te.RetryAfter)
			}
		})
	}
	srv.SetFault("rr", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 401})
	if _, err := c.Rerank(context.Background(), "q", docs); KindOf(err) != KindAuth {
		t.Errorf("401: %v, want auth", err)
	}
}

// fakeReranker scores documents by a fixed table of their texts, or fails.
type fakeReranker struct {
	scores map[string]float64
	err    error
	calls  int
}

func (f *fakeReranker) Rerank(_ context.Context, _ string, docs []string) ([]retrieval.RerankScore, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	var out []retrieval.RerankScore
	for i, d := range docs {
		out = append(out, retrieval.RerankScore{Index: i, Score: f.scores[d]})
	}
	return out, nil
}

// listRetriever returns its documents, as many as asked for.
type listRetriever []retrieval.Doc

func (l listRetriever) Retrieve(_ context.Context, _ string, k int) ([]retrieval.Doc, error) {
	return l[:min(k, len(l))], nil
}

func docIDs(docs []retrieval.Doc) []string {
	var out []string
	for _, d := range docs {
		out = append(out, d.ID)
	}
	return out
}

// TestMemoRerank: the Memo reranks the retrieved documents once; Apply
// asks its guard as tier "rerank", a failed or skipped rerank keeps the
// retriever's order, and MinScore drops documents.
func TestMemoRerank(t *testing.T) {
	docs := listRetriever{{ID: "a", Title: "A", Text: "a"}, {ID: "b", Title: "B", Text: "b"}, {ID: "c", Title: "C", Text: "c"}}
	scores := map[string]float64{"A\na": 0.1, "B\nb": 0.9, "C\nc": 0.5}
	boom := &Error{Kind: KindServer, Tier: "rerank", Model: "bge", Err: errors.New("down")}
	tests := []struct {
		name     string
		rr       *fakeReranker
		deny     bool
		minScore float64
		want     []string
		log      []string
	}{
		{"reordered", &fakeReranker{scores: scores}, false, 0, []string{"b", "c"}, []string{"bge:ok"}},
		{"min score drops", &fakeReranker{scores: scores}, false, 0.6, []string{"b"}, []string{"bge:ok"}},
		{"failure keeps the order", &fakeReranker{err: boom}, false, 0.6, []string{"a", "b"}, []string{"bge:server_error"}},
		{"skipped keeps the order", &fakeReranker{scores: scores}, true, 0, []string{"a", "b"}, []string{"bge:skip"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &recordingGuard{deny: map[string]bool{"bge": tt.deny}}
			rr := &Rerank{Reranker: tt.rr, Model: Candidate{ID: "bge"}, MinScore: tt.minScore}
			m := &Memo{K: 3, Rerank: func(ctx context.Context, question string, docs []retrieval.Doc) []retrieval.Doc {
				return rr.Apply(ctx, g, question, docs)
			}}
			q := Query{Question: "q", Memo: m}
			for range 2 { // the second call reuses the first's documents
				got, err := m.Docs(context.Background(), docs, q, 2)
				if err != nil || !slices.Equal(docIDs(got), tt.want) {
					t.Fatalf("Docs = %v, %v; want %v", docIDs(got), err, tt.want)
				}
			}
			if !slices.Equal(g.log, tt.log) {
				t.Errorf("guard log %v, want %v", g.log, tt.log)
			}
			if want := map[bool]int{false: 1, true: 0}[tt.deny]; tt.rr.calls != want {
				t.Errorf("%d rerank calls, want %d", tt.rr.calls, want)
			}
		})
	}
}

// panicGuard records the error each release gets.
type panicGuard struct{ released []error }

func (g *panicGuard) Acquire(ctx context.Context, _ string, _ Candidate) (context.Context, func(error, Usage), bool) {
	return ctx, func(err error, _ Usage) { g.released = append(g.released, err) }, true
}

// TestGuardCallReleasesOnPanic guards "the guard hears the outcome of
// every call it lets through": a panicking call is released as a failure
// and the panic goes on.
func TestGuardCallReleasesOnPanic(t *testing.T) {
	g := &panicGuard{}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		_ = GuardCall(context.Background(), g, "rerank", Candidate{ID: "m"}, func(context.Context) error { panic("boom") })
	}()
	if len(g.released) != 1 || g.released[0] == nil {
		t.Errorf("released with %v, want one failure", g.released)
	}
	if err := GuardCall(context.Background(), nil, "rerank", Candidate{ID: "m"}, func(context.Context) error { return nil }); err != nil {
		t.Errorf("nil guard: %v", err)
	}
}
