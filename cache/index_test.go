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

// reword returns q asked another way with the same content: a stopword or a
// Han stop phrase added in front or at the end, as people reword a question
// they asked before. Such a rewording is a true hit at the default
// similarity.
func reword(r *rand.Rand, q string, _ []string, _ *rand.Zipf) string {
	if strings.Contains(q, " ") {
		switch r.IntN(4) {
		case 0:
			return "please " + q
		case 1:
			return "how do i " + q + "?"
		case 2:
			return q + " please"
		default:
			return "hi, " + q + " thanks"
		}
	}
	switch r.IntN(3) {
	case 0:
		return "请问" + q
	case 1:
		return "我想问" + q + "？"
	default:
		return q + "吗"
	}
}

// rewrite turns a stored question into a query that should find it.
type rewrite func(r *rand.Rand, q string, words []string, zipf *rand.Zipf) string

// newCorpus returns n stored questions and the given number of queries:
// stored questions rewritten by rw at even positions, unrelated questions at
// odd ones.
func newCorpus(n, queries int, seed uint64, rw rewrite) (stored, asked corpus) {
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
			asked.texts = append(asked.texts, rw(r, stored.texts[r.IntN(n)], words, zipf))
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
		out = x.search(q, 1, 0, out)
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
			stored, asked := newCorpus(n, 400, 7, perturb)
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
		stored, asked := newCorpus(n, 256, 11, reword)
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

// BenchmarkIndexSearch measures the index alone, without and with the
// default minimum similarity, next to brute force.
func BenchmarkIndexSearch(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		stored, asked := newCorpus(n, 256, 11, reword)
		x := buildIndex(stored)
		for _, minSim := range []float32{0, 0.92} {
			name := fmt.Sprintf("%dk", n/1000)
			if minSim > 0 {
				name += fmt.Sprintf("-min%.2f", minSim)
			}
			b.Run(name, func(b *testing.B) {
				defer reportCPU(b)()
				var out []hit
				i := 0
				for b.Loop() {
					out = x.search(asked.vecs[i%len(asked.vecs)], candidates, minSim, out)
					i++
				}
			})
		}
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
	stored, _ := newCorpus(2*n, 0, 13, perturb)
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
	// With a minimum similarity of 0.88, about half the queries (at cosine
	// about 0.89 to their source) have an exact hit.
	const minSim = 0.88
	ok, okMin, hits := 0, 0, 0
	var out []hit
	q := make([]float32, dim)
	for range queries {
		src := vecs[r.IntN(n)]
		for j := range q {
			q[j] = src[j] + 0.5*float32(r.NormFloat64())
		}
		normalize(q) // as exactBest expects
		best := exactBest(x, q)
		out = x.search(q, 1, 0, out)
		if len(out) == 1 && out[0].sim >= best-1e-6 {
			ok++
		}
		out = x.search(q, 1, minSim, out)
		if best >= minSim {
			hits++
		}
		if agreesAt(out, best, minSim) {
			okMin++
		}
	}
	if got := float64(ok) / queries; got < 0.98 {
		t.Errorf("recall@1 = %.3f, want >= 0.98", got)
	}
	if got := float64(okMin) / queries; got < 0.98 {
		t.Errorf("recall@1 at similarity %.2f = %.3f (%d exact hits), want >= 0.98", minSim, got, hits)
	}
	if hits < queries/5 || hits > queries*4/5 {
		t.Errorf("%d of %d queries have an exact hit at %.2f, want a mix", hits, queries, minSim)
	}
}

// TestTenantsShareProjectionPlanes guards the memory of a tenant: the
// hyperplanes of a dimension, the same for every tenant's index, are made
// once and shared, not copied into each index.
func TestTenantsShareProjectionPlanes(t *testing.T) {
	a, b := newIndex(DefaultHashDim), newIndex(DefaultHashDim)
	if len(a.planes) != sketchBits*DefaultHashDim || &a.planes[0] != &b.planes[0] {
		t.Errorf("planes of two indexes (%d, %d components) are not one shared array", len(a.planes), len(b.planes))
	}
	if p := newIndex(64).planes; len(p) != sketchBits*64 || &p[0] == &a.planes[0] {
		t.Errorf("planes of dimension 64: %d components, want their own %d", len(p), sketchBits*64)
	}
}
