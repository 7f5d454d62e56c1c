package retrieval_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/retrieval"
)

// gateEmbedder is a fakeEmbedder whose calls for documents (texts other
// than the questions it is told of) wait until release is closed or their
// context ends; it counts the calls in flight.
type gateEmbedder struct {
	*fakeEmbedder
	questions []string
	release   chan struct{}
	entered   chan struct{} // receives once per document call, as it starts waiting

	inFlight, maxInFlight atomic.Int64
	calls                 atomic.Int64
}

func newGate(f *fakeEmbedder, questions ...string) *gateEmbedder {
	return &gateEmbedder{fakeEmbedder: f, questions: questions, release: make(chan struct{}), entered: make(chan struct{}, 100)}
}

func (g *gateEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 1 && slices.Contains(g.questions, texts[0]) {
		return g.fakeEmbedder.Embed(ctx, texts)
	}
	g.calls.Add(1)
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for old := g.maxInFlight.Load(); n > old && !g.maxInFlight.CompareAndSwap(old, n); old = g.maxInFlight.Load() {
	}
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.fakeEmbedder.Embed(ctx, texts)
}

// TestHybridFirstQuestionDoesNotWaitForDocuments guards "embedding the
// corpus never takes a question's time": while every document batch hangs,
// questions are answered at once by the lexical score and the status says
// the vectors are not ready; once the batches finish, questions blend.
func TestHybridFirstQuestionDoesNotWaitForDocuments(t *testing.T) {
	kb := newKB(t, hybridDocs, fillers(30))
	gate := newGate(newHybridEmbedder(), "refund")
	var logs bytes.Buffer
	h := newHybrid(t, retrieval.HybridConfig{Lexical: kb, Embedder: gate, Weight: 0.7, BatchSize: 8,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	h.StartVectors()
	<-gate.entered // the first batch hangs
	// The bound is far beyond any answer that does not wait for the batches.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		docs, err := h.Retrieve(ctx, "refund", 3)
		if err != nil || !slices.Equal(ids(docs), []string{"a"}) {
			t.Fatalf("while documents are being embedded: %v, %v; want the lexical [a]", ids(docs), err)
		}
	}
	if st := h.VectorStatus(); st.Ready || st.Version != 1 || st.Total != len(hybridDocs)+30 || st.Done != 0 {
		t.Errorf("status while embedding = %+v, want not ready, version 1, 0 of 33 done", st)
	}
	close(gate.release)
	if err := h.WaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	if st := h.VectorStatus(); !st.Ready || st.Done != st.Total {
		t.Errorf("status after = %+v, want ready", st)
	}
	docs, err := h.Retrieve(ctx, "refund", 3)
	if err != nil || len(docs) < 2 || docs[0].ID != "b" {
		t.Errorf("after the vectors are ready: %v, %v; want b (by meaning) first", ids(docs), err)
	}
	for _, want := range []string{"embedding documents", "to_embed=33", "document vectors ready"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// TestHybridBackgroundConcurrency: at most Concurrency batches are in
// flight at once.
func TestHybridBackgroundConcurrency(t *testing.T) {
	gate := newGate(newHybridEmbedder())
	h := newHybrid(t, retrieval.HybridConfig{Lexical: newKB(t, fillers(40)), Embedder: gate, BatchSize: 4, Concurrency: 3})
	h.StartVectors()
	for range 3 {
		<-gate.entered
	}
	close(gate.release)
	if err := h.WaitVectors(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := gate.maxInFlight.Load(); got != 3 {
		t.Errorf("at most %d batches in flight, want 3", got)
	}
	if got := gate.calls.Load(); got != 10 {
		t.Errorf("%d batch calls for 40 documents in batches of 4, want 10", got)
	}
}

// TestHybridRetriesFailedEmbeddingAfterDelay: a failed background
// embedding is not tried again by the questions that follow until
// RetryDelay has passed on the clock.
func TestHybridRetriesFailedEmbeddingAfterDelay(t *testing.T) {
	boom := errors.New("embedding service down")
	emb := &fakeEmbedder{err: boom}
	clk := clock.NewManual(time.Unix(1000, 0))
	var fallbacks atomic.Int64
	h := newHybrid(t, retrieval.HybridConfig{Lexical: newKB(t, hybridDocs), Embedder: emb, Clock: clk,
		RetryDelay: time.Minute, OnFallback: func(error) { fallbacks.Add(1) }})
	ctx := context.Background()
	if err := h.WaitVectors(ctx); !errors.Is(err, boom) {
		t.Fatalf("WaitVectors = %v, want %v", err, boom)
	}
	st := h.VectorStatus()
	if st.Ready || !errors.Is(st.Err, boom) || !st.Failed.Equal(clk.Now()) {
		t.Errorf("status = %+v, want not ready with the failure and its time", st)
	}
	for range 5 {
		if docs, err := h.Retrieve(ctx, "refund", 3); err != nil || !slices.Equal(ids(docs), []string{"a"}) {
			t.Fatalf("Retrieve = %v, %v; want the lexical [a]", ids(docs), err)
		}
	}
	if got := len(emb.embedded()); got != len(hybridDocs) {
		t.Errorf("embedded %d texts within RetryDelay, want only the first attempt's %d", got, len(hybridDocs))
	}
	if fallbacks.Load() != 1 {
		t.Errorf("OnFallback called %d times, want 1", fallbacks.Load())
	}
	clk.Advance(time.Minute)
	emb.mu.Lock()
	emb.err = nil
	emb.mu.Unlock()
	if _, err := h.Retrieve(ctx, "refund", 3); err != nil { // starts the retry
		t.Fatal(err)
	}
	if err := h.WaitVectors(ctx); err != nil {
		t.Errorf("after RetryDelay: %v, want the vectors ready", err)
	}
}

// TestHybridReloadEmbedsChangedDocumentsInBackground: after a reload,
// questions are ranked lexically until the new version's vectors are
// ready, and only the changed document is embedded again.
func TestHybridReloadEmbedsChangedDocumentsInBackground(t *testing.T) {
	dir := t.TempDir()
	write(t, dir+"/a.md", "---\nid: a\ntitle: Refund policy\n---\nRefund policy details for orders.")
	write(t, dir+"/c.md", "---\nid: c\ntitle: Shipping\n---\nParcels ship daily.")
	kb, err := retrieval.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	gate := newGate(newHybridEmbedder(), "refund")
	close(gate.release)
	h := readyHybrid(t, retrieval.HybridConfig{Lexical: kb, Embedder: gate})
	gate.release = make(chan struct{}) // the next batches hang
	write(t, dir+"/c.md", "---\nid: c\ntitle: Shipping\n---\nParcels ship twice a day.")
	if err := kb.Reload(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := h.Retrieve(ctx, "refund", 3); err != nil {
		t.Fatal(err)
	}
	if st := h.VectorStatus(); st.Ready || st.Version != 2 {
		t.Errorf("status after the reload = %+v, want version 2 not ready", st)
	}
	before := len(gate.embedded())
	close(gate.release)
	if err := h.WaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gate.embedded()[before:]; len(got) != 1 || !strings.Contains(got[0], "twice a day") {
		t.Errorf("after the reload embedded %q, want only the changed document", got)
	}
}

// TestHybridCloseStopsHangingEmbedding: Close cancels a batch that hangs
// and waits for it (the package's goleak check sees no goroutine left).
func TestHybridCloseStopsHangingEmbedding(t *testing.T) {
	gate := newGate(newHybridEmbedder())
	h := retrieval.NewHybrid(retrieval.HybridConfig{Lexical: newKB(t, hybridDocs), Embedder: gate, Logger: slog.New(slog.DiscardHandler)})
	h.StartVectors()
	<-gate.entered
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := h.WaitVectors(context.Background()); err == nil {
			t.Error("WaitVectors = nil after Close, want an error")
		}
	})
	h.Close()
	wg.Wait()
	if st := h.VectorStatus(); st.Ready {
		t.Errorf("status after Close = %+v, want not ready", st)
	}
}

// TestHybridUseEmbedder: the embedder given by UseEmbedder embeds the
// documents computed after it, and nil ranks lexically.
func TestHybridUseEmbedder(t *testing.T) {
	first, second := newHybridEmbedder(), newHybridEmbedder()
	kb := newKB(t, hybridDocs)
	h := newHybrid(t, retrieval.HybridConfig{Lexical: kb, Embedder: first})
	h.UseEmbedder(second)
	if err := h.WaitVectors(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(first.embedded()) != 0 || len(second.embedded()) != len(hybridDocs) {
		t.Errorf("embedded %d texts with the first embedder, %d with the second; want 0 and %d",
			len(first.embedded()), len(second.embedded()), len(hybridDocs))
	}
	h.UseEmbedder(nil)
	if docs, err := h.Retrieve(context.Background(), "refund", 3); err != nil || !slices.Equal(ids(docs), []string{"a"}) {
		t.Errorf("without an embedder: %v, %v; want the lexical [a]", ids(docs), err)
	}
	if st := h.VectorStatus(); !st.Ready {
		t.Errorf("without an embedder the status is %+v, want ready (nothing to compute)", st)
	}
}
