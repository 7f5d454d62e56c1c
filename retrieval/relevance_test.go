package retrieval_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/retrieval/embedtest"
)

type oodCase struct {
	Question string `json:"question"`
	Topic    string `json:"topic"`
	Lang     string `json:"lang"`
}

func loadOOD(t *testing.T) []oodCase {
	return loadJSONL[oodCase](t, "kb-ood.jsonl")
}

func (c oodCase) question() string { return c.Question }

// TestOutOfDomainGetsNoDocuments guards the relevance floor: questions the
// knowledge base does not cover must get no documents (so the pipeline
// falls through to the static tier), while the in-domain questions of
// kb-eval.jsonl keep their recall.
func TestOutOfDomainGetsNoDocuments(t *testing.T) {
	kb := openTestKB(t)
	cases := loadOOD(t)
	langs := map[string]int{}
	for _, c := range cases {
		langs[c.Lang]++
	}
	if len(cases) < 30 || langs["zh"] < 15 || langs["en"] < 15 {
		t.Fatalf("kb-ood.jsonl has %d questions (%v), want at least 30, half zh and half en", len(cases), langs)
	}
	empty := 0
	for _, c := range cases {
		docs, err := kb.Retrieve(context.Background(), c.Question, 3)
		if err != nil {
			t.Fatalf("%q: %v", c.Question, err)
		}
		if len(docs) == 0 {
			empty++
			continue
		}
		t.Logf("leak: %q (%s) got %v", c.Question, c.Topic, ids(docs))
	}
	share := float64(empty) / float64(len(cases))
	r := recallAt(t, kb, loadEval(t), 3)
	t.Logf("out-of-domain with no documents = %.3f (%d/%d); recall@3 = %.3f", share, empty, len(cases), r["all"])
	if share < 0.9 {
		t.Errorf("%d of %d out-of-domain questions got no documents (%.3f), want >= 0.9", empty, len(cases), share)
	}
	if r["all"] < 0.85 {
		t.Errorf("recall@3 = %.3f, want >= 0.85", r["all"])
	}
}

// TestRelevanceFloor is the regression test for questions that matched
// articles through a question word or one common character.
func TestRelevanceFloor(t *testing.T) {
	kb := openTestKB(t)
	ctx := context.Background()
	// 怎么办 ("what should I do") is a question phrase like 怎么 and 如何:
	// it must not match the articles whose titles end in it.
	for _, q := range []string{"企鹅怎么飞", "怎么", "如何", "what can I do", "penguins",
		"怎么办", "感冒了怎么办", "企鹅怎么办", "下雨了该怎么办呢"} {
		if docs, err := kb.Retrieve(ctx, q, 3); err != nil || len(docs) != 0 {
			t.Errorf("Retrieve(%q) = %v, %v; want no documents", q, ids(docs), err)
		}
	}
	for q, want := range map[string]string{
		"如何开发票":                      "zh-invoice-issue",
		"七天无理由退货怎么退":                 "zh-return-7day",
		"how do I cancel an invoice": "en-invoice-cancel",
		"付款失败怎么办":                    "zh-payment-failed",
		"忘记登录密码怎么办":                  "zh-account-reset-password",
		"买贵了怎么办":                     "zh-price-protection",
	} {
		docs, err := kb.Retrieve(ctx, q, 3)
		if err != nil || !contains(ids(docs), want) {
			t.Errorf("Retrieve(%q) = %v, %v; want %s among them", q, ids(docs), err, want)
		}
	}
}

func TestMinCoverageConfig(t *testing.T) {
	docs := []retrieval.Doc{
		{ID: "ship", Title: "Shipping", Text: "Parcels ship daily from our warehouse; bad weather can delay them."},
		{ID: "pay", Title: "Payment", Text: "We take cards."},
	}
	ctx := context.Background()
	const q = "what is the weather on mars" // one body word, one unknown word
	tests := []struct {
		name string
		cfg  retrieval.IndexConfig
		want int
	}{
		{"default floor", retrieval.IndexConfig{}, 0},
		{"negative disables the floor", retrieval.IndexConfig{MinCoverage: -1}, 1},
		{"low floor", retrieval.IndexConfig{MinCoverage: 0.05}, 1},
		{"full coverage", retrieval.IndexConfig{MinCoverage: 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := retrieval.NewIndexConfig(docs, tt.cfg).Retrieve(ctx, q, 3)
			if err != nil || len(got) != tt.want {
				t.Errorf("got %v, %v; want %d documents", ids(got), err, tt.want)
			}
		})
	}
	t.Run("full coverage through the title", func(t *testing.T) {
		got, err := retrieval.NewIndexConfig(docs, retrieval.IndexConfig{MinCoverage: 1}).Retrieve(ctx, "shipping", 3)
		if err != nil || len(got) != 1 || got[0].ID != "ship" {
			t.Errorf("got %v, %v; want [ship]", ids(got), err)
		}
	})
	t.Run("NewIndex uses the default", func(t *testing.T) {
		a, _ := retrieval.NewIndex(docs).Retrieve(ctx, q, 3)
		b, _ := retrieval.NewIndexConfig(docs, retrieval.IndexConfig{MinCoverage: retrieval.DefaultMinCoverage}).Retrieve(ctx, q, 3)
		if len(a) != len(b) {
			t.Errorf("NewIndex gave %v, the default config %v", ids(a), ids(b))
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// testEmbedders are the embedders the relevance floor is tested under:
// one without signal (random vectors), one whose unrelated texts all
// score about 0.75, a dense one with signal (the hash embedder's, mixed
// with noise), and the hash embedder as pipelines use it (its similarity
// counts shared words and character trigrams, so it only re-ranks: a
// vector-only hit needs cosine 0.99).
func testEmbedders() []struct {
	name   string
	emb    cache.Embedder
	minSim float64
} {
	return []struct {
		name   string
		emb    cache.Embedder
		minSim float64
	}{
		{"no signal", embedtest.NoSignal{}, 0},
		{"unrelated at 0.75", embedtest.Offset{Embedder: embedtest.NoSignal{}, Base: 0.75}, 0},
		{"dense with signal", embedtest.Noisy{Embedder: cache.NewHashEmbedder(0), Noise: 0.3}, 0},
		{"hash", cache.NewHashEmbedder(0), 0.99},
	}
}

// TestOutOfDomainUnderEmbedders guards the vector side of the relevance
// floor under each of testEmbedders. No
// out-of-domain or nonsense question may get a document by vector search
// (so every question the lexical floor keeps empty stays empty, and every
// nonsense question gets none), and recall@3 on the development set stays
// within 2 points of the lexical retriever's.
func TestOutOfDomainUnderEmbedders(t *testing.T) {
	kb := openTestKB(t)
	ctx := context.Background()
	dev := loadEval(t)
	lexRecall := recall(t, kb, dev, 3, false)["all"]
	var questions []string
	for _, c := range loadOOD(t) {
		questions = append(questions, c.Question)
	}
	junk := embedtest.Nonsense(20)
	questions = append(questions, junk...)
	for _, tt := range testEmbedders() {
		t.Run(tt.name, func(t *testing.T) {
			h := readyHybrid(t, retrieval.HybridConfig{Lexical: kb, Embedder: tt.emb, MinSimilarity: tt.minSim})
			empty := 0
			for _, q := range questions {
				lex, _ := kb.Retrieve(ctx, q, 3)
				docs, err := h.Retrieve(ctx, q, 3)
				if err != nil {
					t.Fatalf("%q: %v", q, err)
				}
				if len(docs) == 0 {
					empty++
				}
				for _, d := range docs {
					if !slices.Contains(ids(lex), d.ID) {
						t.Errorf("%q got %s by vector search alone", q, d.ID)
					}
				}
				if slices.Contains(junk, q) && len(docs) > 0 {
					t.Errorf("nonsense %q got %v", q, ids(docs))
				}
			}
			r := recall(t, h, dev, 3, false)["all"]
			t.Logf("out-of-domain and nonsense with no documents = %d/%d; recall@3 = %.3f (lexical %.3f)", empty, len(questions), r, lexRecall)
			if r < lexRecall-0.02 {
				t.Errorf("recall@3 = %.3f, lexical %.3f: dropped more than 2 points", r, lexRecall)
			}
		})
	}
}

// TestStandingFigures measures the standings (similarity minus the mean
// over the corpus, in standard deviations) behind DefaultMinRelevance over
// testdata/kb: the highest any out-of-domain or nonsense question reaches,
// which must stay below the floor under every embedder but the hash one,
// and that of the article answering each development question.
//
//	go test ./retrieval -run TestStandingFigures -v
func TestStandingFigures(t *testing.T) {
	kb := openTestKB(t)
	docs := kb.Docs()
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Title + "\n" + d.Text
	}
	var outside []string
	for _, c := range loadOOD(t) {
		outside = append(outside, c.Question)
	}
	outside = append(outside, embedtest.Nonsense(1000)...)
	ctx := context.Background()
	for _, tt := range testEmbedders() {
		dv, err := tt.emb.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		var highest, answering []float64
		for _, q := range outside {
			z := standings(t, tt.emb, q, dv)
			highest = append(highest, slices.Max(z))
		}
		for _, c := range loadEval(t) {
			z := standings(t, tt.emb, c.Question, dv)
			answering = append(answering, z[slices.IndexFunc(docs, func(d retrieval.Doc) bool { return d.ID == c.ID })])
		}
		slices.Sort(highest)
		slices.Sort(answering)
		top := highest[len(highest)-1]
		t.Logf("%-18s outside: highest %.2f (p99 %.2f); answering article: p50 %.2f, p90 %.2f",
			tt.name, top, highest[len(highest)*99/100], answering[len(answering)/2], answering[len(answering)*9/10])
		if tt.minSim == 0 && top >= retrieval.DefaultMinRelevance {
			t.Errorf("%s: an outside question stands at %.2f, not below DefaultMinRelevance %v", tt.name, top, retrieval.DefaultMinRelevance)
		}
	}
}

// standings returns how far each document vector of dv stands above the
// mean similarity of q's embedding to them, in standard deviations.
func standings(t *testing.T, emb cache.Embedder, q string, dv [][]float32) []float64 {
	t.Helper()
	qv, err := emb.Embed(context.Background(), []string{q})
	if err != nil {
		t.Fatal(err)
	}
	cos := make([]float64, len(dv))
	mean := 0.0
	for i, v := range dv {
		var dot, na, nb float64
		for j := range v {
			dot += float64(qv[0][j]) * float64(v[j])
			na += float64(qv[0][j]) * float64(qv[0][j])
			nb += float64(v[j]) * float64(v[j])
		}
		if na > 0 && nb > 0 {
			cos[i] = dot / math.Sqrt(na*nb)
		}
		mean += cos[i] / float64(len(dv))
	}
	sd := 0.0
	for _, c := range cos {
		sd += (c - mean) * (c - mean) / float64(len(dv))
	}
	sd = math.Sqrt(sd)
	for i := range cos {
		cos[i] = (cos[i] - mean) / sd
	}
	return cos
}
