package retrieval_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ragfuse/ragfuse/retrieval"
)

// fakeEmbedder maps a text to the vector of the first rule whose substring
// it contains (case-insensitive), or to [0 0 1].
type fakeEmbedder struct {
	rules  []rule
	err    error
	failOn string // if set, err is returned only for a batch with a text containing it
	dim    int    // if set, vectors get this many dimensions (for mismatch tests)

	mu    sync.Mutex
	texts []string // every text embedded, in order
}

type rule struct {
	sub string
	vec []float32
}

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.texts = append(f.texts, texts...)
	f.mu.Unlock()
	if f.err != nil && (f.failOn == "" || slices.ContainsFunc(texts, func(t string) bool { return strings.Contains(t, f.failOn) })) {
		return nil, f.err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{0, 0, 1}
		for _, r := range f.rules {
			if strings.Contains(strings.ToLower(t), r.sub) {
				out[i] = r.vec
				break
			}
		}
		if f.dim > 0 {
			out[i] = make([]float32, f.dim)
			out[i][0] = 1
		}
	}
	return out, nil
}

func (f *fakeEmbedder) embedded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.texts)
}

// hybridDocs: "a" matches "refund" by words but not by meaning, "b" means
// refund without the word, "c" is unrelated.
var hybridDocs = []retrieval.Doc{
	{ID: "a", Title: "Refund policy", Text: "Refund policy details for orders."},
	{ID: "b", Title: "Getting your money back", Text: "How to get compensated."},
	{ID: "c", Title: "Shipping", Text: "Parcels ship daily."},
}

// fillers returns n documents that share no word with the hybrid tests'
// questions; the fake embedders give them the default vector. They give
// the corpus a spread of similarities for a document to stand out from.
func fillers(n int) []retrieval.Doc {
	out := make([]retrieval.Doc, n)
	for i := range out {
		out[i] = retrieval.Doc{ID: fmt.Sprintf("filler-%02d", i), Title: fmt.Sprintf("Topic %d", i), Text: fmt.Sprintf("Unrelated note number %d.", i)}
	}
	return out
}

// newKB returns a knowledge base over docs.
func newKB(t testing.TB, docs ...[]retrieval.Doc) *retrieval.KnowledgeBase {
	t.Helper()
	kb, err := retrieval.New(slices.Concat(docs...))
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// readyHybrid returns a Hybrid over cfg whose document vectors are ready,
// closed when the test ends.
func readyHybrid(t testing.TB, cfg retrieval.HybridConfig) *retrieval.Hybrid {
	t.Helper()
	h := newHybrid(t, cfg)
	if err := h.WaitVectors(context.Background()); err != nil {
		t.Fatalf("WaitVectors: %v", err)
	}
	return h
}

// newHybrid returns a Hybrid over cfg, closed when the test ends.
func newHybrid(t testing.TB, cfg retrieval.HybridConfig) *retrieval.Hybrid {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := retrieval.NewHybrid(cfg)
	t.Cleanup(func() { h.Close() })
	return h
}

func newHybridEmbedder() *fakeEmbedder {
	return &fakeEmbedder{rules: []rule{
		{"compensat", []float32{1, 0, 0}},
		{"details", []float32{0, 1, 0}},
		{"refund", []float32{1, 0, 0}},
	}}
}

func TestHybridBlendChangesRanking(t *testing.T) {
	kb := newKB(t, hybridDocs, fillers(30))
	ctx := context.Background()
	lex, _ := kb.Retrieve(ctx, "refund", 3)
	if got := ids(lex); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("lexical = %v, want [a]", got)
	}
	h := readyHybrid(t, retrieval.HybridConfig{Lexical: kb, Embedder: newHybridEmbedder(), Weight: 0.7})
	docs, err := h.Retrieve(ctx, "refund", 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(docs); len(got) < 2 || got[0] != "b" || got[1] != "a" {
		t.Fatalf("hybrid = %v, want b (meaning) before a (words)", got)
	}
	if b, a := docs[0].Score, docs[1].Score; b < 0.69 || b > 0.71 || a < 0.29 || a > 0.31 {
		t.Errorf("scores b=%v a=%v, want 0.7 and 0.3", b, a)
	}

	h = readyHybrid(t, retrieval.HybridConfig{Lexical: kb, Embedder: newHybridEmbedder(), Weight: 0.2})
	docs, _ = h.Retrieve(ctx, "refund", 3)
	if got := ids(docs); len(got) < 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("hybrid with weight 0.2 = %v, want a before b", got)
	}
}

func TestHybridOverPlainRetrieverBlendsCandidatesOnly(t *testing.T) {
	ix := retrieval.NewIndex(hybridDocs) // not a corpus: b is never a candidate
	h := retrieval.NewHybrid(retrieval.HybridConfig{Lexical: ix, Embedder: newHybridEmbedder(), Weight: 0.7})
	docs, err := h.Retrieve(context.Background(), "refund", 3)
	if err != nil || !slices.Equal(ids(docs), []string{"a"}) {
		t.Errorf("hybrid over Index = %v, %v; want [a]", ids(docs), err)
	}
}

func TestHybridFallsBackToLexical(t *testing.T) {
	kb := newKB(t, hybridDocs)
	ctx := context.Background()
	want, _ := kb.Retrieve(ctx, "refund policy", 3)
	boom := errors.New("embedding service down")
	tests := []struct {
		name string
		emb  *fakeEmbedder
		vec  []float32
	}{
		{"question embedding fails", &fakeEmbedder{err: boom, failOn: "refund policy"}, nil},
		{"document embedding fails", &fakeEmbedder{err: boom}, []float32{1, 0, 0}},
		{"dimensions differ", &fakeEmbedder{dim: 8}, []float32{1, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var fallbacks []error
			h := newHybrid(t, retrieval.HybridConfig{
				Lexical: kb, Embedder: tt.emb,
				OnFallback: func(err error) { mu.Lock(); fallbacks = append(fallbacks, err); mu.Unlock() },
			})
			if err := h.WaitVectors(ctx); (err != nil) != (tt.name == "document embedding fails") {
				t.Fatalf("WaitVectors: %v", err)
			}
			docs, err := h.RetrieveVector(ctx, "refund policy", tt.vec, 3)
			if err != nil {
				t.Fatalf("err = %v, want lexical results", err)
			}
			if !slices.Equal(ids(docs), ids(want)) || docs[0].Score != want[0].Score {
				t.Errorf("got %v, want the lexical %v", docs, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(fallbacks) != 1 {
				t.Errorf("OnFallback called %d times, want 1", len(fallbacks))
			}
		})
	}
	t.Run("no embedder", func(t *testing.T) {
		h := newHybrid(t, retrieval.HybridConfig{Lexical: kb})
		docs, err := h.Retrieve(ctx, "refund policy", 3)
		if err != nil || !slices.Equal(ids(docs), ids(want)) {
			t.Errorf("got %v, %v; want %v", ids(docs), err, ids(want))
		}
	})
}

func TestHybridEmbedsDocumentsOncePerVersion(t *testing.T) {
	kb := newKB(t, hybridDocs)
	emb := newHybridEmbedder()
	h := readyHybrid(t, retrieval.HybridConfig{Lexical: kb, Embedder: emb})
	ctx := context.Background()
	for range 3 {
		if _, err := h.RetrieveVector(ctx, "refund", []float32{1, 0, 0}, 2); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(emb.embedded()); n != len(hybridDocs) {
		t.Fatalf("embedded %d texts for 3 questions with a given vector, want %d (documents once)", n, len(hybridDocs))
	}
	if err := kb.Reload(); err != nil { // same documents, new version
		t.Fatal(err)
	}
	if err := h.WaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Retrieve(ctx, "refund", 2); err != nil {
		t.Fatal(err)
	}
	if got := emb.embedded()[len(hybridDocs):]; !slices.Equal(got, []string{"refund"}) {
		t.Errorf("after a reload of unchanged documents embedded %q, want only the question", got)
	}
}

func TestHybridCancelled(t *testing.T) {
	h := newHybrid(t, retrieval.HybridConfig{Lexical: newKB(t, hybridDocs), Embedder: newHybridEmbedder()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Retrieve(ctx, "refund", 3); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	docs, err := h.Retrieve(context.Background(), "refund", 0)
	if err != nil || len(docs) != 0 {
		t.Errorf("k=0: %v, %v; want nothing", ids(docs), err)
	}
}

func TestHybridConcurrentWithReload(t *testing.T) {
	kb := openTestKB(t)
	emb := &fakeEmbedder{rules: []rule{{"退", []float32{1, 0, 0}}, {"return", []float32{0, 1, 0}}}}
	h := newHybrid(t, retrieval.HybridConfig{Lexical: kb, Embedder: emb})
	var wg sync.WaitGroup
	var errs atomic.Int64
	for i := range 4 {
		wg.Go(func() {
			q := []string{"怎么退货", "how do I return an item"}[i%2]
			for range 50 {
				docs, err := h.Retrieve(context.Background(), q, 3)
				if err != nil || len(docs) != 3 {
					errs.Add(1)
				}
			}
		})
	}
	for range 5 {
		if err := kb.Reload(); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	if errs.Load() != 0 {
		t.Errorf("%d failed questions", errs.Load())
	}
}

// TestHybridMinRelevance guards the vector side of the relevance floor: a
// document that shares no word with the question enters the results only
// if its similarity stands MinRelevance standard deviations above the
// question's mean similarity to the corpus (and reaches MinSimilarity,
// if set).
func TestHybridMinRelevance(t *testing.T) {
	kb := newKB(t, []retrieval.Doc{
		{ID: "lex", Title: "Refund policy", Text: "Refund policy details."},
		{ID: "close", Title: "Getting your money back", Text: "How to get compensated."},
		{ID: "far", Title: "Gift wrapping", Text: "We wrap presents."},
	}, fillers(30))
	emb := &fakeEmbedder{rules: []rule{
		{"compensat", []float32{1, 0.2, 0}}, // cosine 0.98 with the question: 5.5 sd above the mean
		{"wrap", []float32{0.2, 0, 1}},      // cosine 0.20: 1 sd
		{"details", []float32{0, 1, 0}},
		{"refund", []float32{1, 0, 0}},
	}}
	tests := []struct {
		name     string
		min, sim float64
		want     []string
	}{
		{"default keeps the far document out", 0, 0, []string{"close", "lex"}},
		{"higher floor keeps the close one out too", 6, 0, []string{"lex"}},
		{"negative admits every vector hit", -1, 0, []string{"close", "lex", "far"}},
		{"MinSimilarity applies as well", 0, 0.99, []string{"lex"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := readyHybrid(t, retrieval.HybridConfig{Lexical: kb, Embedder: emb, Weight: 0.7, MinRelevance: tt.min, MinSimilarity: tt.sim})
			got, err := h.Retrieve(context.Background(), "refund", 3)
			if err != nil || !slices.Equal(ids(got), tt.want) {
				t.Errorf("got %v, %v; want %v", ids(got), err, tt.want)
			}
		})
	}
}

// TestHybridNoVectorDoesNotEmbed guards "the question is embedded at most
// once": after the embedding failed for a question, NoVector ranks by the
// lexical score without asking the embedder again.
func TestHybridNoVectorDoesNotEmbed(t *testing.T) {
	emb := newHybridEmbedder()
	h := newHybrid(t, retrieval.HybridConfig{Lexical: newKB(t, hybridDocs), Embedder: emb, Weight: 0.7})
	docs, err := h.RetrieveVector(context.Background(), "refund", retrieval.NoVector, 3)
	if err != nil || !slices.Equal(ids(docs), []string{"a"}) {
		t.Fatalf("RetrieveVector(NoVector) = %v, %v; want the lexical [a]", ids(docs), err)
	}
	if got := emb.embedded(); len(got) != 0 {
		t.Errorf("embedder called with %q, want no call", got)
	}
}

// reloadingEmbedder is a fakeEmbedder that runs reload the first time it
// embeds query: between the lexical search and the vector search of that
// question.
type reloadingEmbedder struct {
	*fakeEmbedder
	query  string
	reload func()
	once   sync.Once
}

func (e *reloadingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if slices.Contains(texts, e.query) {
		e.once.Do(e.reload)
	}
	return e.fakeEmbedder.Embed(ctx, texts)
}

// TestHybridAnswersFromOneSnapshot guards against mixing knowledge-base
// versions in one answer: when a reload lands while the question is being
// embedded, the vector search must rank the documents of the version the
// lexical hits came from, not a document the reload added. A corpus other
// than a *KnowledgeBase gets the same by starting the question again.
func TestHybridAnswersFromOneSnapshot(t *testing.T) {
	for _, tt := range []struct {
		name string
		wrap func(*retrieval.KnowledgeBase) retrieval.Retriever
	}{
		{"knowledge base", func(kb *retrieval.KnowledgeBase) retrieval.Retriever { return kb }},
		{"other corpus", func(kb *retrieval.KnowledgeBase) retrieval.Retriever { return struct{ *retrieval.KnowledgeBase }{kb} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "old.md"), "---\nid: old\ntitle: Refund policy\n---\nRefund policy of version one.")
			write(t, filepath.Join(dir, "keep.md"), "---\nid: keep\ntitle: Shipping\n---\nParcels ship daily.")
			kb, err := retrieval.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			const q = "refund policy"
			emb := &reloadingEmbedder{
				fakeEmbedder: &fakeEmbedder{rules: []rule{{"compensat", []float32{1, 0, 0}}, {q, []float32{1, 0, 0}}}},
				query:        q,
				reload: func() {
					if err := os.Remove(filepath.Join(dir, "old.md")); err != nil {
						t.Error(err)
					}
					write(t, filepath.Join(dir, "new.md"), "---\nid: new\ntitle: Getting your money back\n---\nHow to get compensated.")
					if err := kb.Reload(); err != nil {
						t.Error(err)
					}
				},
			}
			h := readyHybrid(t, retrieval.HybridConfig{Lexical: tt.wrap(kb), Embedder: emb})
			docs, err := h.Retrieve(context.Background(), q, 3)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(docs); len(got) == 0 || slices.Contains(got, "old") && slices.Contains(got, "new") {
				t.Errorf("Retrieve = %v, want documents of one knowledge-base version", got)
			}
		})
	}
}

// TestHybridRejectsNonFiniteVectors guards the blend against NaN and Inf:
// a non-finite question vector falls back to the lexical ranking, and a
// document with a non-finite vector never enters by vector search (NaN
// compares false with MinSimilarity, so it once got through).
func TestHybridRejectsNonFiniteVectors(t *testing.T) {
	kb := newKB(t, hybridDocs)
	ctx := context.Background()
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	var fallbacks atomic.Int64
	h := readyHybrid(t, retrieval.HybridConfig{Lexical: kb, Embedder: newHybridEmbedder(),
		OnFallback: func(error) { fallbacks.Add(1) }})
	docs, err := h.RetrieveVector(ctx, "refund", []float32{inf, 0, 0}, 3)
	if err != nil || !slices.Equal(ids(docs), []string{"a"}) || fallbacks.Load() != 1 {
		t.Errorf("RetrieveVector(+Inf) = %v, %v, %d fallbacks; want the lexical [a] and 1 fallback", ids(docs), err, fallbacks.Load())
	}
	emb := &fakeEmbedder{rules: []rule{{"compensat", []float32{nan, 1, 0}}, {"refund", []float32{1, 0, 0}}}}
	kb = newKB(t, hybridDocs[:2]) // the NaN document ranks right after "a"
	h = readyHybrid(t, retrieval.HybridConfig{Lexical: kb, Embedder: emb, MinRelevance: 0.5})
	docs, err = h.Retrieve(ctx, "refund", 3)
	if err != nil || !slices.Equal(ids(docs), []string{"a"}) {
		t.Errorf("Retrieve with a NaN document vector = %v, %v; want [a]", ids(docs), err)
	}
	for _, d := range docs {
		if math.IsNaN(d.Score) {
			t.Errorf("document %s has score NaN", d.ID)
		}
	}
}
