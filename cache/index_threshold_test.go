package cache

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// thresholdRecall counts, per half of the queries (reworded stored
// questions at even positions, unrelated ones at odd), how many thresholded
// searches give the answer of an exact lookup at minSim: the best entry
// (by similarity, so ties count) when the exact best reaches minSim, nothing
// otherwise. hits counts the queries for which the exact lookup hits.
type thresholdRecall struct {
	agree, total, hits [2]int
}

func (r thresholdRecall) share(half int) float64 {
	return float64(r.agree[half]) / float64(r.total[half])
}

func (r thresholdRecall) overall() float64 {
	return float64(r.agree[0]+r.agree[1]) / float64(r.total[0]+r.total[1])
}

// agreesAt reports whether out, the result of a search with minimum
// similarity minSim, is what an exact lookup at minSim gives: the best
// entry (by similarity, so ties count) when best, the exact best
// similarity, reaches minSim, and nothing otherwise.
func agreesAt(out []hit, best, minSim float32) bool {
	if best >= minSim {
		return len(out) == 1 && out[0].sim >= best-1e-6
	}
	return len(out) == 0
}

func measureThresholdRecall(x *index, asked corpus, exact []float32, minSim float32) thresholdRecall {
	var r thresholdRecall
	var out []hit
	for i, q := range asked.vecs {
		half := i % 2
		out = x.search(q, 1, minSim, out)
		r.total[half]++
		if exact[i] >= minSim {
			r.hits[half]++
		}
		if agreesAt(out, exact[i], minSim) {
			r.agree[half]++
		}
	}
	return r
}

// TestIndexThresholdRecall checks the lookup's semantics: a search with a
// minimum similarity answers as an exact lookup at that threshold does.
func TestIndexThresholdRecall(t *testing.T) {
	sizes := []int{1000, 10000}
	if !testing.Short() {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		for _, mix := range []struct {
			name string
			rw   rewrite
		}{{"reworded", reword}, {"swapped", perturb}} {
			stored, asked := newCorpus(n, 400, 7, mix.rw)
			x := buildIndex(stored)
			exact := make([]float32, len(asked.vecs))
			for i, q := range asked.vecs {
				exact[i] = exactBest(x, q)
			}
			for _, minSim := range []float32{0.92, 0.85} {
				t.Run(fmt.Sprintf("%d/%s/%.2f", n, mix.name, minSim), func(t *testing.T) {
					r := measureThresholdRecall(x, asked, exact, minSim)
					t.Logf("recall@1 at %d entries, similarity %.2f: %s %.4f (%d of %d hit), unrelated %.4f (%d of %d hit), overall %.4f",
						n, minSim, mix.name, r.share(0), r.hits[0], r.total[0], r.share(1), r.hits[1], r.total[1], r.overall())
					for half, name := range []string{mix.name, "unrelated"} {
						if got := r.share(half); got < 0.98 {
							t.Errorf("%s recall@1 = %.4f, want >= 0.98", name, got)
						}
					}
				})
			}
		}
	}
}

// TestSketchBoundMargin measures how far past the binomial mean the sketch
// distance of a pair at or above a threshold goes, in standard deviations at
// the pair's own angle, and checks that no such pair lies beyond
// thresholdBound, which would make a thresholded search miss it.
func TestSketchBoundMargin(t *testing.T) {
	pairs := 20000
	if testing.Short() {
		pairs = 4000
	}
	x := newIndex(256)
	r := rand.New(rand.NewPCG(5, 6))
	words := synthWords(r, 3000)
	zipf := rand.NewZipf(r, 1.1, 20, 2999)
	e := NewHashEmbedder(0)
	a, b := make([]float32, e.Dim()), make([]float32, e.Dim())
	// worst is the largest distance past the mean at the pair's own angle,
	// nearest the largest past the mean at a threshold the pair reaches, both
	// in standard deviations at that angle.
	worst, nearest, counted, beyond := math.Inf(-1), math.Inf(-1), 0, 0
	for i := range pairs {
		if i%2 == 0 {
			// Hash embeddings of a question and a rewording of it.
			q := synthQuestion(r, words, zipf)
			e.EmbedInto(a, q)
			e.EmbedInto(b, perturb(r, q, words, zipf))
		} else {
			// Dense vectors at cosine about 0.8 to 1.
			for j := range a {
				a[j] = float32(r.NormFloat64())
			}
			noise := 0.75 * r.Float64()
			for j := range b {
				b[j] = a[j] + float32(noise*r.NormFloat64())
			}
		}
		normalize(a)
		normalize(b)
		c := dot(a, b)
		if c < 0.85 {
			continue
		}
		var sa, sb [sketchWords]uint64
		x.sketch(&sa, a)
		x.sketch(&sb, b)
		d := 0
		for w := range sa {
			d += bits.OnesCount64(sa[w] ^ sb[w])
		}
		if z, ok := sigmasPast(d, c); ok {
			worst = max(worst, z)
		}
		counted++
		for _, minSim := range []float32{0.85, 0.92} {
			if c < minSim {
				continue
			}
			z, _ := sigmasPast(d, minSim)
			nearest = max(nearest, z)
			if d > thresholdBound(minSim) {
				beyond++
			}
		}
	}
	t.Logf("%d pairs at cosine >= 0.85: sketch distance at most %.2f standard deviations past the mean at the pair's angle, %.2f past the mean at a threshold it reaches; margin %d",
		counted, worst, nearest, thresholdSigmas)
	if counted < pairs/4 {
		t.Fatalf("only %d pairs at cosine >= 0.85, want at least %d", counted, pairs/4)
	}
	if beyond > 0 {
		t.Errorf("%d pairs at or above a threshold lie beyond its sketch bound", beyond)
	}
}

// sigmasPast returns how many standard deviations the sketch distance d lies
// past the mean distance of a pair at cosine c, and false when c is 1.
func sigmasPast(d int, c float32) (float64, bool) {
	p := math.Acos(min(1, float64(c))) / math.Pi
	sd := math.Sqrt(sketchBits * p * (1 - p))
	if sd == 0 {
		return 0, false
	}
	return (float64(d) - sketchBits*p) / sd, true
}
