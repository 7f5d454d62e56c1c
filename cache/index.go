package cache

import (
	"math"
	"math/rand/v2"
	"sync"
)

// simEps is the tolerance of a similarity threshold: float32 rounding puts
// the cosine of a vector with itself below 1 (by up to 2.4e-7 at 256
// dimensions, 7.2e-7 at 3072), and Similarity 1 must still match the very
// vector stored.
const simEps = 1e-5

// Index parameters.
const (
	sketchWords = 4    // 256-bit sign sketches
	exactBelow  = 2048 // below this many vectors, search exactly …
	// … or below exactBelowMin with a minimum similarity, where the
	// sketches prune nearly every vector.
	exactBelowMin = 256
	minRerank     = 1024 // candidates re-scored on the int8 copies, at least …
	rerankShare   = 24   // … or one in rerankShare of the vectors …
	maxRerank     = 3072 // … but at most this many
	// finalRescore candidates, best on the int8 copies, are scored exactly.
	finalRescore = 16
)

// index is a vector index for cosine similarity: every vector has a 256-bit
// sign sketch (SimHash: the signs of its projections on fixed random
// hyperplanes, whose Hamming distance estimates the angle); a search scans the
// sketches, keeps the closest candidates, scores them on int8 copies of the
// vectors and re-scores the best of those exactly. Vectors are stored
// normalized, positions are dense and a removal moves the last vector into
// the hole. An index is not safe for concurrent use; its scratch buffers are
// reused by every search, so a search allocates nothing once they have grown.
type index struct {
	dim    int
	planes []float32 // dim rows of sketchBits: component j of every hyperplane; shared, read-only
	vecs   []float32 // len(ids)*dim, normalized
	vq     []int8    // vecs quantized to int8, for the first re-scoring
	scale  []float32 // per vector: vecs ≈ scale * vq
	sk     []uint64  // len(ids)*sketchWords
	ids    []*record // the record at each position

	// scratch, reused between searches and made by the first that needs it
	q      []float32 // the normalized query
	nz     []int32   // the nonzero components of q
	qi     []int32   // q quantized: all dim components, or those of nz when sparse
	all    []uint64  // every sketch's distance to the query, four to a word
	dist   []uint16  // candidates' sketch distances, in scan order
	cand   []int32   // candidates' positions, in scan order
	sorted []int32   // candidates by sketch distance
	sdist  []uint16
	approx []hit // candidates scored on the int8 copies
	sink   uint8 // keeps the loads of touch
}

// planeSeeds are fixed so that sketches agree across processes.
const planeSeed1, planeSeed2 = 0x72616766, 0x75736521

func newIndex(dim int) *index {
	return &index{dim: dim, planes: planesOf(dim)}
}

// maxSharedDims bounds how many dimensions' hyperplanes are kept for sharing
// (an index of another dimension makes its own): a service embedding with
// a stray dimension on every call must not grow memory without bound.
const maxSharedDims = 8

// sharedPlanes holds the hyperplanes of each dimension in use, computed once
// and read by every index of that dimension: they are the same for all
// (1 KB per vector component: 256 KB at dimension 256) and never written.
var sharedPlanes struct {
	mu    sync.Mutex // guards byDim
	byDim map[int][]float32
}

// planesOf returns the hyperplanes of dimension dim: dim rows of sketchBits
// components, from a generator seeded by the dimension alone.
func planesOf(dim int) []float32 {
	sharedPlanes.mu.Lock()
	defer sharedPlanes.mu.Unlock()
	if p, ok := sharedPlanes.byDim[dim]; ok {
		return p
	}
	r := rand.New(rand.NewPCG(planeSeed1, planeSeed2+uint64(dim)))
	p := make([]float32, sketchBits*dim)
	for i := range p {
		p[i] = float32(r.NormFloat64())
	}
	if sharedPlanes.byDim == nil {
		sharedPlanes.byDim = make(map[int][]float32)
	}
	if len(sharedPlanes.byDim) < maxSharedDims {
		sharedPlanes.byDim[dim] = p
	}
	return p
}

func (x *index) len() int { return len(x.ids) }

// add appends vec (of length dim) for rec and sets rec.pos.
func (x *index) add(rec *record, vec []float32) {
	rec.pos = len(x.ids)
	x.ids = append(x.ids, rec)
	start := len(x.vecs)
	x.vecs = append(x.vecs, vec...)
	v := x.vecs[start:]
	normalize(v)
	var s [sketchWords]uint64
	x.sketch(&s, v)
	x.sk = append(x.sk, s[:]...)
	var m float32
	for _, f := range v {
		m = max(m, f, -f)
	}
	sc := m / 127
	x.scale = append(x.scale, sc)
	qstart := len(x.vq)
	x.vq = append(x.vq, make([]int8, x.dim)...) // no allocation once grown
	if sc > 0 {
		q := x.vq[qstart:]
		for j, f := range v {
			q[j] = int8(math.Round(float64(f / sc)))
		}
	}
}

// remove deletes the vector at pos, moving the last one into its place.
func (x *index) remove(pos int) {
	last := len(x.ids) - 1
	if pos != last {
		moved := x.ids[last]
		x.ids[pos] = moved
		moved.pos = pos
		copy(x.vecs[pos*x.dim:(pos+1)*x.dim], x.vecs[last*x.dim:])
		copy(x.sk[pos*sketchWords:(pos+1)*sketchWords], x.sk[last*sketchWords:])
		copy(x.vq[pos*x.dim:(pos+1)*x.dim], x.vq[last*x.dim:])
		x.scale[pos] = x.scale[last]
	}
	x.ids[last] = nil
	x.ids = x.ids[:last]
	x.vecs = x.vecs[:last*x.dim]
	x.sk = x.sk[:last*sketchWords]
	x.vq = x.vq[:last*x.dim]
	x.scale = x.scale[:last]
}

// reset empties the index, keeping its hyperplanes.
func (x *index) reset() {
	clear(x.ids)
	x.ids, x.vecs, x.sk, x.vq, x.scale = x.ids[:0], x.vecs[:0], x.sk[:0], x.vq[:0], x.scale[:0]
}

// hit is a search result: a position and its cosine similarity.
type hit struct {
	pos int
	sim float32
}

// search returns up to k positions most similar to vec, best first, with
// their exact cosine similarity. With minSim > 0 it returns only positions at
// least minSim similar (less simEps, for rounding), and a vector whose
// sketch lies beyond thresholdBound of minSim is not scored at all: a query
// with no near vector costs one pass over the sketches. With minSim <= 0 it
// returns the k nearest. out is reused.
func (x *index) search(vec []float32, k int, minSim float32, out []hit) []hit {
	out = out[:0]
	n := len(x.ids)
	if n == 0 || k <= 0 {
		return out
	}
	if x.q == nil {
		x.q = make([]float32, x.dim)
	}
	q := x.q
	copy(q, vec)
	normalize(q)
	// Hash embeddings are sparse: score only the nonzero components.
	x.nz = x.nz[:0]
	for j, f := range q {
		if f != 0 {
			x.nz = append(x.nz, int32(j))
		}
	}
	sparse := len(x.nz) < x.dim/2
	score := func(i int) float32 { return dot(q, x.vecs[i*x.dim:(i+1)*x.dim]) }
	if sparse {
		score = func(i int) float32 { return sparseDot(q, x.nz, x.vecs[i*x.dim:(i+1)*x.dim]) }
	}
	if n <= exactBelow && minSim <= 0 || n <= exactBelowMin {
		for i := range n {
			if s := score(i); minSim <= 0 || s >= minSim-simEps {
				out = keepTop(out, k, hit{i, s})
			}
		}
		return out
	}
	// Sketch scan, then the int8 copies for the candidates, then the exact
	// vectors for the best of those.
	var qs [sketchWords]uint64
	x.sketch(&qs, q)
	qscale := x.quantizeQuery(sparse)
	approx := x.approx[:0]
	keep := max(k, finalRescore)
	var cand []int32
	var dist []uint16
	if minSim > 0 {
		cand, dist = x.within(&qs, thresholdBound(minSim), rerankCount(n))
	} else {
		cand, dist = x.candidates(&qs, rerankCount(n))
	}
	limit := len(qs) * 64 // no pruning until keep candidates are scored
	x.touch(cand[:min(touchBatch, len(cand))])
	for c, p := range cand {
		if int(dist[c]) > limit {
			break // no farther sketch is likely to beat the ones kept
		}
		if c%touchBatch == 0 {
			// Load the next batch while this one is scored.
			x.touch(cand[min(c+touchBatch, len(cand)):min(c+2*touchBatch, len(cand))])
		}
		i := int(p)
		var d int64
		if sparse {
			d = x.sparseQdot(i)
		} else {
			d = x.denseQdot(i)
		}
		sim := x.scale[i] * qscale * float32(d)
		if len(approx) == keep && sim <= approx[keep-1].sim {
			continue
		}
		approx = keepTop(approx, keep, hit{i, sim})
		if len(approx) == keep {
			limit = hammingBound(approx[keep-1].sim, 4)
		}
	}
	x.approx = approx
	for _, h := range approx {
		if s := score(h.pos); minSim <= 0 || s >= minSim-simEps {
			out = keepTop(out, k, hit{h.pos, s})
		}
	}
	return out
}

// touchBatch candidates are loaded together before they are scored.
const touchBatch = 16

// touch loads the int8 copies and scales of the vectors at positions ps, so
// that their cache misses overlap instead of coming one candidate at a time:
// the candidates lie scattered over memory much larger than the CPU caches.
func (x *index) touch(ps []int32) {
	s := x.sink
	for _, p := range ps {
		i := int(p)
		v := x.vq[i*x.dim : (i+1)*x.dim]
		for o := 0; o < len(v); o += 64 {
			s ^= uint8(v[o])
		}
		s ^= uint8(math.Float32bits(x.scale[i]))
	}
	x.sink = s
}

func rerankCount(n int) int {
	return min(max(minRerank, n/rerankShare), maxRerank)
}

// keepTop inserts h into out, kept sorted by similarity and at most k long.
func keepTop(out []hit, k int, h hit) []hit {
	if len(out) == k && h.sim <= out[k-1].sim {
		return out
	}
	if len(out) < k {
		out = append(out, h)
	} else {
		out[k-1] = h
	}
	for i := len(out) - 1; i > 0 && out[i].sim > out[i-1].sim; i-- {
		out[i], out[i-1] = out[i-1], out[i]
	}
	return out
}

// dot returns the dot product of a and b, which have the same length.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// sparseDot returns the dot product of a and b over the components nz,
// outside which a is zero.
func sparseDot(a []float32, nz []int32, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for _, j := range nz {
		s += a[j] * b[j]
	}
	return s
}

// normalize scales v to unit length in place (a zero vector stays zero).
func normalize(v []float32) {
	var ss float64
	for _, f := range v {
		ss += float64(f) * float64(f)
	}
	if ss == 0 || math.IsNaN(ss) || math.IsInf(ss, 0) {
		if ss != 0 {
			clear(v) // NaN or Inf: treat as no information
		}
		return
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= inv
	}
}
