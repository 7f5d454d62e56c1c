package retrieval_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"

	"github.com/ragfuse/ragfuse/retrieval"
)

// syntheticDocs returns n documents, half Chinese and half English, whose
// words are drawn at random from the test knowledge base, so term
// statistics resemble a real help centre.
func syntheticDocs(b *testing.B, n int) []retrieval.Doc {
	b.Helper()
	var words []string
	var han []rune
	for _, d := range openTestKB(b).Docs() {
		for _, w := range strings.Fields(d.Text) {
			if w = strings.TrimFunc(w, unicode.IsPunct); w != "" && !strings.ContainsFunc(w, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
				words = append(words, w)
			}
		}
		for _, r := range d.Text {
			if unicode.Is(unicode.Han, r) {
				han = append(han, r)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	docs := make([]retrieval.Doc, n)
	for i := range docs {
		var sb strings.Builder
		if i%2 == 0 {
			for range 200 {
				sb.WriteRune(han[rng.IntN(len(han))])
			}
		} else {
			for range 120 {
				sb.WriteString(words[rng.IntN(len(words))])
				sb.WriteByte(' ')
			}
		}
		text := sb.String()
		docs[i] = retrieval.Doc{ID: fmt.Sprintf("doc-%05d", i), Title: text[:min(24, len(text))], Text: text}
	}
	return docs
}

func benchmarkCorpora(b *testing.B) map[string][]retrieval.Doc {
	return map[string][]retrieval.Doc{
		"kb":  openTestKB(b).Docs(),
		"10k": syntheticDocs(b, 10000),
	}
}

func BenchmarkNewIndex(b *testing.B) {
	for _, name := range []string{"kb", "10k"} {
		docs := benchmarkCorpora(b)[name]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				retrieval.NewIndex(docs)
			}
		})
	}
}

func BenchmarkRetrieve(b *testing.B) {
	queries := map[string]string{
		"zh": "收到的东西有质量问题，一个月内能退货吗",
		"en": "how long does a refund take to reach my credit card",
	}
	corpora := benchmarkCorpora(b)
	for _, name := range []string{"kb", "10k"} {
		ix := retrieval.NewIndex(corpora[name])
		for _, lang := range []string{"zh", "en"} {
			b.Run(name+"/"+lang, func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ix.Retrieve(ctx, queries[lang], 5); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkHybrid measures blending over the test knowledge base with a
// cheap in-process embedder, document vectors already cached.
func BenchmarkHybrid(b *testing.B) {
	kb := openTestKB(b)
	h := readyHybrid(b, retrieval.HybridConfig{Lexical: kb, Embedder: runeEmbedder{}})
	ctx := context.Background()
	if _, err := h.Retrieve(ctx, "warm up", 3); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Retrieve(ctx, "退款多久能到账", 5); err != nil {
			b.Fatal(err)
		}
	}
}

// runeEmbedder hashes runes into 64 dimensions.
type runeEmbedder struct{}

func (runeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		for _, r := range t {
			v[int(r)%64]++
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkBestPassage measures choosing the passage of an article of the
// test knowledge base, and of a long one-paragraph text.
func BenchmarkBestPassage(b *testing.B) {
	kb := openTestKB(b)
	doc, _ := kb.Get("zh-return-shipping-fee")
	long := retrieval.Doc{Text: strings.Repeat("Our shop sells many kinds of goods. ", 3000)}
	for _, tt := range []struct {
		name string
		doc  retrieval.Doc
	}{{"article", doc}, {"100KB", long}} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				retrieval.BestPassage("寄回商品的快递费要我自己出吗 goods", tt.doc, 280)
			}
		})
	}
}
