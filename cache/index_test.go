package cache

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// corpus is a synthetic set of support questions, English and Chinese, and
// their hash embeddings.
type corpus struct {
	texts []string
	vecs  [][]float32
}

// synthWords returns n made-up English-like words.
func synthWords(r *rand.Rand, n int) []string {
	syl := []string{"ba", "re", "fun", "ship", "pay", "ord", "ac", "count", "ver", "ti", "lo", "mem", "ber", "war", "ran", "ty", "in", "voice", "de", "liv"}
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for range 2 + r.IntN(2) {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// synthQuestion returns a question of Zipf-distributed words or Han
// characters.
func synthQuestion(r *rand.Rand, words []string, zipf *rand.Zipf) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		for i := range 4 + r.IntN(6) {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[zipf.Uint64()])
		}
		return b.String()
	}
	for range 5 + r.IntN(8) {
		b.WriteRune(rune(0x4E00 + zipf.Uint64()))
	}
	return b.String()
}

// perturb returns q with one word or character replaced, as a paraphrase.
func perturb(r *rand.Rand, q string, words []string, zipf *rand.Zipf) string {
	if f := strings.Fields(q); len(f) > 1 {
		f[r.IntN(len(f))] = words[zipf.Uint64()]
		return strings.Join(f, " ")
	}
	rs := []rune(q)
	rs[r.IntN(len(rs))] = rune(0x4E00 + zipf.Uint64())
	return string(rs)
}

func newCorpus(n, queries int, seed uint64) (stored, asked corpus) {
	r := rand.New(rand.NewPCG(seed, 1))
	words := synthWords(r, 3000)
	zipf := rand.NewZipf(r, 1.1, 20, 2999)
	e := NewHashEmbedder(0)
	embed := func(c *corpus) {
		back := make([]float32, len(c.texts)*e.Dim())
		for i, t := range c.texts {
			c.vecs = append(c.vecs, back[i*e.Dim():(i+1)*e.Dim()])
			e.EmbedInto(c.vecs[i], t)
		}
	}
	for range n {
		stored.texts = append(stored.texts, synthQuestion(r, words, zipf))
	}
	for i := range queries {
		if i%2 == 0 {
			asked.texts = append(asked.texts, perturb(r, stored.texts[r.IntN(n)], words, zipf))
		} else {
			asked.texts = append(asked.texts, synthQuestion(r, words, zipf))
		}
	}
	embed(&stored)
	embed(&asked)
	return stored, asked
}

func buildIndex(c corpus) *index {
	x := newIndex(len(c.vecs[0]))
	for _, v := range c.vecs {
		x.add(&record{}, v)
	}
	return x
}

// exactBest returns the best similarity by brute force.
func exactBest(x *index, q []float32) float32 {
	var nz []int32
	for j, f := range q {
		if f != 0 {
			nz = append(nz, int32(j))
		}
	}
	best := float32(-2)
	for i := range x.len() {
		best = max(best, sparseDot(q, nz, x.vecs[i*x.dim:(i+1)*x.dim]))
	}
	return best
}

// recallAt1 is the share of queries whose best index result is as similar
// as the exact best.
func recallAt1(x *index, asked corpus) float64 {
	ok := 0
	var out []hit
	for _, q := range asked.vecs {
		out = x.search(q, 1, out)
		if len(out) == 1 && out[0].sim >= exactBest(x, q)-1e-6 {
			ok++
		}
	}
	return float64(ok) / float64(len(asked.vecs))
}

func TestIndexRecall(t *testing.T) {
	sizes := []int{1000, 10000}
	if !testing.Short() {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			stored, asked := newCorpus(n, 400, 7)
			x := buildIndex(stored)
			got := recallAt1(x, asked)
			t.Logf("recall@1 at %d entries: %.4f (rerank %d)", n, got, rerankCount(n))
			if got < 0.98 {
				t.Errorf("recall@1 = %.4f, want >= 0.98", got)
			}
		})
	}
}

// reportCPU reports the process CPU time per operation (cpu-ns/op) when the
// returned function is called at the end of a benchmark.
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// BenchmarkLookup measures Cache.Get (normalization, exact table, index
// search, false-hit guard; embedding excluded) in one tenant of n entries.
func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		stored, asked := newCorpus(n, 256, 11)
		c := New(Config{MaxEntries: n})
		for i, q := range stored.texts {
			if err := c.Put("t", q, stored.vecs[i], Entry{Text: q}); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			defer reportCPU(b)()
			i := 0
			for b.Loop() {
				_, _ = c.Get("t", asked.texts[i%len(asked.texts)], asked.vecs[i%len(asked.vecs)], 0)
				i++
			}
		})
	}
}

// BenchmarkIndexSearch measures the index alone, next to brute force.
func BenchmarkIndexSearch(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		stored, asked := newCorpus(n, 256, 11)
		x := buildIndex(stored)
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			defer reportCPU(b)()
			var out []hit
			i := 0
			for b.Loop() {
				out = x.search(asked.vecs[i%len(asked.vecs)], candidates, out)
				i++
			}
		})
		b.Run(fmt.Sprintf("%dk-bruteforce", n/1000), func(b *testing.B) {
			defer reportCPU(b)()
			i := 0
			for b.Loop() {
				q := asked.vecs[i%len(asked.vecs)]
				best := float32(-2)
				for j := range x.len() {
					best = max(best, dot(q, x.vecs[j*x.dim:(j+1)*x.dim]))
				}
				i++
			}
		})
	}
}

// BenchmarkPut measures Cache.Put into a full tenant (each Put evicts one).
func BenchmarkPut(b *testing.B) {
	const n = 10000
	stored, _ := newCorpus(2*n, 0, 13)
	c := New(Config{MaxEntries: n})
	i := 0
	for b.Loop() {
		_ = c.Put("t", stored.texts[i%len(stored.texts)], stored.vecs[i%len(stored.vecs)], Entry{Text: "a"})
		i++
	}
}

// TestIndexDense checks the dense scoring path (embeddings with no zero
// components) and a vector count that does not fill the last word of
// sketch distances: paraphrase-like queries must find what exact search
// finds.
func TestIndexDense(t *testing.T) {
	const n, dim, queries = 4003, 64, 200
	r := rand.New(rand.NewPCG(3, 4))
	x := newIndex(dim)
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = make([]float32, dim)
		for j := range vecs[i] {
			vecs[i][j] = float32(r.NormFloat64())
		}
		x.add(&record{}, vecs[i])
	}
	ok := 0
	var out []hit
	q := make([]float32, dim)
	for range queries {
		src := vecs[r.IntN(n)]
		for j := range q {
			q[j] = src[j] + 0.5*float32(r.NormFloat64())
		}
		normalize(q) // as exactBest expects
		out = x.search(q, 1, out)
		if len(out) == 1 && out[0].sim >= exactBest(x, q)-1e-6 {
			ok++
		}
	}
	if got := float64(ok) / queries; got < 0.98 {
		t.Errorf("recall@1 = %.3f, want >= 0.98", got)
	}
}
