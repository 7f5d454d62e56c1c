package cache

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// Index parameters.
const (
	sketchWords = 4    // 256-bit sign sketches
	exactBelow  = 2048 // below this many vectors, search exactly
	minRerank   = 1024 // candidates re-scored exactly, at least …
	rerankShare = 24   // … or one in rerankShare of the vectors
	maxRerank   = 4096
	// finalRescore candidates, best on the int8 copies, are scored exactly.
	finalRescore = 16
)

// index is a vector index for cosine similarity: every vector has a 256-bit
// sign sketch (SimHash: the signs of its projections on fixed random
// hyperplanes, whose Hamming distance estimates the angle); a search scans the
// sketches, keeps the closest candidates and re-scores them exactly. Vectors
// are stored normalized, positions are dense and a removal moves the last
// vector into the hole. An index is not safe for concurrent use.
type index struct {
	dim    int
	planes []float32 // dim rows of 64*sketchWords: component j of every hyperplane
	vecs   []float32 // len(ids)*dim, normalized
	vq     []int8    // vecs quantized to int8, for the first re-scoring
	scale  []float32 // per vector: vecs ≈ scale * vq
	sk     []uint64  // len(ids)*sketchWords
	ids    []*record // the record at each position

	// scratch, reused between searches
	dist   []uint16
	cand   []int32
	q      []float32
	nz     []int32 // the nonzero components of q
	approx []hit   // candidates scored on the int8 copies
	sorted []int32 // candidates by sketch distance
	sdist  []uint16
}

// planeSeeds are fixed so that sketches agree across processes.
const planeSeed1, planeSeed2 = 0x72616766, 0x75736521

func newIndex(dim int) *index {
	r := rand.New(rand.NewPCG(planeSeed1, planeSeed2+uint64(dim)))
	planes := make([]float32, 64*sketchWords*dim)
	for i := range planes {
		planes[i] = float32(r.NormFloat64())
	}
	return &index{dim: dim, planes: planes, q: make([]float32, dim)}
}

func (x *index) len() int { return len(x.ids) }

// add appends vec (of length dim) for rec and sets rec.pos.
func (x *index) add(rec *record, vec []float32) {
	rec.pos = len(x.ids)
	x.ids = append(x.ids, rec)
	start := len(x.vecs)
	x.vecs = append(x.vecs, vec...)
	normalize(x.vecs[start:])
	var s [sketchWords]uint64
	x.sketch(&s, x.vecs[start:])
	x.sk = append(x.sk, s[:]...)
	v := x.vecs[start:]
	var m float32
	for _, f := range v {
		m = max(m, f, -f)
	}
	sc := m / 127
	x.scale = append(x.scale, sc)
	for _, f := range v {
		var b int8
		if sc > 0 {
			b = int8(math.Round(float64(f / sc)))
		}
		x.vq = append(x.vq, b)
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
// their exact cosine similarity. out is reused.
func (x *index) search(vec []float32, k int, out []hit) []hit {
	out = out[:0]
	n := len(x.ids)
	if n == 0 || k <= 0 {
		return out
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
	score := func(i int) float32 { return dot(q, x.vecs[i*x.dim:(i+1)*x.dim]) }
	if len(x.nz) < x.dim/2 {
		score = func(i int) float32 { return sparseDot(q, x.nz, x.vecs[i*x.dim:(i+1)*x.dim]) }
	}
	if n <= exactBelow {
		for i := range n {
			out = keepTop(out, k, hit{i, score(i)})
		}
		return out
	}
	// Sketch scan, then the int8 copies for the candidates, then the exact
	// vectors for the best of those.
	var qs [sketchWords]uint64
	x.sketch(&qs, q)
	approx := x.approx[:0]
	keep := max(k, finalRescore)
	cand, dist := x.candidates(&qs, rerankCount(n))
	limit := len(qs) * 64 // no pruning until keep candidates are scored
	for c, p := range cand {
		if int(dist[c]) > limit {
			break // no farther sketch is likely to beat the ones kept
		}
		i := int(p)
		approx = keepTop(approx, keep, hit{i, x.scale[i] * x.qdot(q, i)})
		if len(approx) == keep {
			limit = hammingBound(approx[keep-1].sim)
		}
	}
	x.approx = approx
	for _, h := range approx {
		out = keepTop(out, k, hit{h.pos, score(h.pos)})
	}
	return out
}

// qdot returns the dot product of q with the int8 copy of vector i (before
// scaling).
func (x *index) qdot(q []float32, i int) float32 {
	v := x.vq[i*x.dim : (i+1)*x.dim : (i+1)*x.dim]
	var s float32
	if len(x.nz) < x.dim/2 {
		for _, j := range x.nz {
			s += q[j] * float32(v[j])
		}
		return s
	}
	var s1 float32
	v = v[:len(q)]
	j := 0
	for ; j+2 <= len(q); j += 2 {
		s += q[j] * float32(v[j])
		s1 += q[j+1] * float32(v[j+1])
	}
	for ; j < len(q); j++ {
		s += q[j] * float32(v[j])
	}
	return s + s1
}

func rerankCount(n int) int {
	return min(max(minRerank, n/rerankShare), maxRerank)
}

// hamming returns the Hamming distance between sketch i and qs.
func (x *index) hamming(i int, qs *[sketchWords]uint64) int {
	s := x.sk[i*sketchWords : i*sketchWords+sketchWords : i*sketchWords+sketchWords]
	return bits.OnesCount64(s[0]^qs[0]) + bits.OnesCount64(s[1]^qs[1]) +
		bits.OnesCount64(s[2]^qs[2]) + bits.OnesCount64(s[3]^qs[3])
}

// sampleSize sketches estimate the distance cut-off before the full pass.
const sampleSize = 1024

// candidates returns the r positions whose sketches are closest to qs in
// Hamming distance, nearest first, with their distances. A strided sample estimates a generous cut-off; one pass
// keeps the positions under it, and the histogram of their distances trims
// them to r. Should the estimate keep fewer than r, a second pass with the
// exact cut-off follows.
func (x *index) candidates(qs *[sketchWords]uint64, r int) ([]int32, []uint16) {
	n := len(x.ids)
	var hist [2 * 64 * sketchWords]int32 // indexed by distance, 0…256
	stride := max(1, n/sampleSize)
	sampled := 0
	for i := 0; i < n; i += stride {
		hist[x.hamming(i, qs)]++
		sampled++
	}
	// Aim at 1.5 r (plus slack for small samples) in the sample's terms.
	est, _ := cutoff(&hist, sampled*(3*r/2)/n+8)
	clear(hist[:])
	cand, dist := x.cand[:0], x.dist[:0]
	for i := range n {
		if d := x.hamming(i, qs); d <= est {
			cand = append(cand, int32(i))
			dist = append(dist, uint16(d))
			hist[d]++
		}
	}
	if len(cand) < r && len(cand) < n {
		// The estimate was too tight: count everything.
		clear(hist[:])
		cand, dist = cand[:0], dist[:0]
		for i := range n {
			d := x.hamming(i, qs)
			cand = append(cand, int32(i))
			dist = append(dist, uint16(d))
			hist[d]++
		}
	}
	x.cand, x.dist = cand, dist
	cut, atCut := len(hist)-1, len(cand)
	if len(cand) > r {
		cut, atCut = cutoff(&hist, r)
	}
	// Counting sort by distance, keeping those under the cut-off.
	var start [2 * 64 * sketchWords]int32
	total := int32(0)
	for d := 0; d <= cut; d++ {
		start[d] = total
		total += hist[d]
	}
	total = total - hist[cut] + int32(atCut)
	if cap(x.sorted) < int(total) {
		x.sorted = make([]int32, total, 2*total)
		x.sdist = make([]uint16, total, 2*total)
	}
	sorted, sdist := x.sorted[:total], x.sdist[:total]
	for k, p := range cand {
		d := int(dist[k])
		if d > cut || d == cut && atCut == 0 {
			continue
		}
		if d == cut {
			atCut--
		}
		sorted[start[d]], sdist[start[d]] = p, uint16(d)
		start[d]++
	}
	return sorted, sdist
}

// cutoff returns the smallest distance c such that at least r counts of
// hist are at distances <= c, and how many of those at c are needed to make
// r.
func cutoff(hist *[2 * 64 * sketchWords]int32, r int) (c, atCut int) {
	sum := 0
	for c = range hist {
		sum += int(hist[c])
		if sum >= r {
			return c, r - (sum - int(hist[c]))
		}
	}
	return len(hist) - 1, 0
}

// sketch sets s to the sign bits of v's projections on the hyperplanes,
// skipping the zero components of v.
func (x *index) sketch(s *[sketchWords]uint64, v []float32) {
	const nb = 64 * sketchWords
	var acc [nb]float32
	for j, f := range v {
		if f == 0 {
			continue
		}
		row := x.planes[j*nb : (j+1)*nb : (j+1)*nb]
		for b := range acc {
			acc[b] += f * row[b]
		}
	}
	for b, p := range acc {
		if p >= 0 {
			s[b/64] |= 1 << (b % 64)
		}
	}
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

// hammingBound returns the sketch distance beyond which a vector is
// unlikely to be more similar than sim: a vector at angle θ differs in each
// sketch bit with probability θ/π, so its distance is binomial; the bound is
// the mean at sim's angle plus four standard deviations.
func hammingBound(sim float32) int {
	const bits = 64 * sketchWords
	p := math.Acos(max(-1, min(1, float64(sim)))) / math.Pi
	return int(bits*p+4*math.Sqrt(bits*p*(1-p))) + 2
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
