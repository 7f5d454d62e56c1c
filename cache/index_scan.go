package cache

import (
	"math"
	"math/bits"
)

// sampleSize sketches estimate the distance cut-off before the full pass.
const sampleSize = 1024

// sketchBits is the length of a sketch and the largest sketch distance.
const sketchBits = 64 * sketchWords

// histogram counts sketches by their distance to the query, 0…sketchBits.
type histogram [sketchBits + 1]int32

// candidates returns the r positions whose sketches are closest to qs in
// Hamming distance, nearest first, with their distances. One pass computes
// every distance; a strided sample of them estimates a generous cut-off, a
// second pass over the distances keeps the positions under it, and the
// histogram of their distances trims them to r. Should the estimate keep
// fewer than r, every position is kept before trimming.
func (x *index) candidates(qs *[sketchWords]uint64, r int) ([]int32, []uint16) {
	all := x.distances(qs)
	n := len(x.ids)
	var hist histogram
	stride := max(1, n/sampleSize)
	sampled := 0
	for i := 0; i < n; i += stride {
		hist[distanceAt(all, i)]++
		sampled++
	}
	// Aim at 1.5 r (plus slack for small samples) in the sample's terms.
	est, _ := hist.cutoff(sampled*(3*r/2)/n + 8)
	clear(hist[:])
	x.keepUnder(uint16(est), &hist)
	if len(x.cand) < r && len(x.cand) < n {
		// The estimate was too tight: keep everything.
		clear(hist[:])
		x.keepUnder(sketchBits, &hist)
	}
	return x.nearest(r, &hist)
}

// within returns, nearest first, the positions whose sketches are at most
// bound from qs, at most the r nearest of them, with their distances. Unlike
// candidates it needs no sample: bound alone decides, so a query with no
// sketch within it costs one pass over the distances and returns nothing.
func (x *index) within(qs *[sketchWords]uint64, bound, r int) ([]int32, []uint16) {
	x.distances(qs)
	var hist histogram
	x.keepUnder(uint16(min(bound, sketchBits)), &hist)
	return x.nearest(r, &hist)
}

// nearest sorts x.cand (with x.dist, counted in hist) by distance and
// returns the r nearest with their distances.
func (x *index) nearest(r int, hist *histogram) ([]int32, []uint16) {
	cand, dist := x.cand, x.dist
	// Without trimming, every candidate is kept, all of those at the last
	// distance included.
	cut, atCut := len(hist)-1, int(hist[len(hist)-1])
	if len(cand) > r {
		cut, atCut = hist.cutoff(r)
	}
	// Counting sort by distance, keeping those under the cut-off.
	var start histogram
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

// distances sets x.all to the Hamming distance of every sketch to qs, four
// to a word: sketch i in bits 16*(i%4) of word i/4. Lanes past the last
// sketch hold sketchBits+1, farther than any sketch. The loop does nothing
// else, which keeps it short: this pass is most of the cost of a search.
func (x *index) distances(qs *[sketchWords]uint64) []uint64 {
	n := len(x.ids)
	words := (n + 3) / 4
	if cap(x.all) < words {
		x.all = make([]uint64, words, words+words/4)
	}
	all := x.all[:words]
	full := n / 4
	sk := x.sk[: full*4*sketchWords : full*4*sketchWords]
	q0, q1, q2, q3 := qs[0], qs[1], qs[2], qs[3]
	for w := range all[:full] {
		s := sk[w*4*sketchWords : (w+1)*4*sketchWords : (w+1)*4*sketchWords]
		d0 := bits.OnesCount64(s[0]^q0) + bits.OnesCount64(s[1]^q1) +
			bits.OnesCount64(s[2]^q2) + bits.OnesCount64(s[3]^q3)
		d1 := bits.OnesCount64(s[4]^q0) + bits.OnesCount64(s[5]^q1) +
			bits.OnesCount64(s[6]^q2) + bits.OnesCount64(s[7]^q3)
		d2 := bits.OnesCount64(s[8]^q0) + bits.OnesCount64(s[9]^q1) +
			bits.OnesCount64(s[10]^q2) + bits.OnesCount64(s[11]^q3)
		d3 := bits.OnesCount64(s[12]^q0) + bits.OnesCount64(s[13]^q1) +
			bits.OnesCount64(s[14]^q2) + bits.OnesCount64(s[15]^q3)
		all[w] = uint64(d0) | uint64(d1)<<16 | uint64(d2)<<32 | uint64(d3)<<48
	}
	if full < words {
		var v uint64
		for lane := range 4 {
			d := sketchBits + 1
			if i := 4*full + lane; i < n {
				d = x.hamming(i, qs)
			}
			v |= uint64(d) << (16 * lane)
		}
		all[full] = v
	}
	x.all = all
	return all
}

// distanceAt returns sketch i's distance from the words of x.distances.
func distanceAt(all []uint64, i int) uint16 { return uint16(all[i/4] >> (16 * (i % 4))) }

// keepUnder sets x.cand and x.dist to the positions whose distances in x.all
// are at most est (at most sketchBits), and their distances, and counts them
// in hist. Four lanes are tested at once: est - d is negative, which sets the
// lane's top bit, only for a distance d > est; no lane carries into the next.
// Within a word, every lane is written and only those kept are counted, so
// that the loop does not branch on each distance.
func (x *index) keepUnder(est uint16, hist *histogram) {
	const lanes, top = 0x0001_0001_0001_0001, 0x8000_8000_8000_8000
	add := (0x7fff - uint64(est)) * lanes
	cand, dist := x.cand[:0], x.dist[:0]
	for w, v := range x.all {
		if (v+add)&top == top {
			continue // all four are farther than est
		}
		k := len(cand)
		cand = append(cand, 0, 0, 0, 0)
		dist = append(dist, 0, 0, 0, 0)
		c, dd := cand[k:k+4:k+4], dist[k:k+4:k+4]
		kept := 0
		for lane := range 4 {
			d := uint16(v >> (16 * lane))
			c[kept&3], dd[kept&3] = int32(4*w+lane), d
			if d <= est {
				kept++
			}
		}
		cand, dist = cand[:k+kept], dist[:k+kept]
	}
	for _, d := range dist {
		hist[d]++
	}
	x.cand, x.dist = cand, dist
}

// hamming returns the Hamming distance between sketch i and qs.
func (x *index) hamming(i int, qs *[sketchWords]uint64) int {
	s := x.sk[i*sketchWords : i*sketchWords+sketchWords : i*sketchWords+sketchWords]
	return bits.OnesCount64(s[0]^qs[0]) + bits.OnesCount64(s[1]^qs[1]) +
		bits.OnesCount64(s[2]^qs[2]) + bits.OnesCount64(s[3]^qs[3])
}

// cutoff returns the smallest distance c such that at least r counts of h
// are at distances <= c, and how many of those at c are needed to make r.
func (h *histogram) cutoff(r int) (c, atCut int) {
	sum := 0
	for c = range h {
		sum += int(h[c])
		if sum >= r {
			return c, r - (sum - int(h[c]))
		}
	}
	return len(h) - 1, 0
}

// sketch sets s to the sign bits of v's projections on the hyperplanes,
// skipping the zero components of v.
func (x *index) sketch(s *[sketchWords]uint64, v []float32) {
	var acc [sketchBits]float32
	for j, f := range v {
		if f == 0 {
			continue
		}
		row := x.planes[j*sketchBits : (j+1)*sketchBits : (j+1)*sketchBits]
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

// hammingBound returns the sketch distance beyond which a vector is
// unlikely to be more similar than sim: a vector at angle θ differs in each
// sketch bit with probability θ/π, so its distance is binomial; the bound is
// the mean at sim's angle plus sigmas standard deviations, plus two bits.
func hammingBound(sim float32, sigmas float64) int {
	p := math.Acos(max(-1, min(1, float64(sim)))) / math.Pi
	return int(sketchBits*p+sigmas*math.Sqrt(sketchBits*p*(1-p))) + 2
}

// queryLevels is the largest magnitude of a quantized query component.
const queryLevels = 1<<15 - 1

// quantizeQuery sets x.qi to x.q in integers (only the components of x.nz,
// in their order, when sparse) and returns the scale: q ≈ scale * qi.
func (x *index) quantizeQuery(sparse bool) float32 {
	if x.qi == nil {
		x.qi = make([]int32, x.dim)
	}
	var m float32
	for _, f := range x.q {
		m = max(m, f, -f)
	}
	if m == 0 {
		clear(x.qi)
		return 0
	}
	sc := m / queryLevels
	if sparse {
		qi := x.qi[:len(x.nz)]
		for k, j := range x.nz {
			qi[k] = int32(math.Round(float64(x.q[j] / sc)))
		}
		return sc
	}
	for j, f := range x.q {
		x.qi[j] = int32(math.Round(float64(f / sc)))
	}
	return sc
}

// sparseQdot returns the dot product of the quantized sparse query with the
// int8 copy of vector i, in integer units.
func (x *index) sparseQdot(i int) int64 {
	v := x.vq[i*x.dim : (i+1)*x.dim : (i+1)*x.dim]
	nz := x.nz
	qi := x.qi[:len(nz)]
	var s int64
	for k, j := range nz {
		s += int64(qi[k]) * int64(v[j])
	}
	return s
}

// denseQdot returns the dot product of the quantized query with the int8
// copy of vector i, in integer units.
func (x *index) denseQdot(i int) int64 {
	v := x.vq[i*x.dim : (i+1)*x.dim : (i+1)*x.dim]
	qi := x.qi[:len(v)]
	var s0, s1, s2, s3 int64
	j := 0
	for ; j+4 <= len(v); j += 4 {
		a, b := qi[j:j+4:j+4], v[j:j+4:j+4]
		s0 += int64(a[0]) * int64(b[0])
		s1 += int64(a[1]) * int64(b[1])
		s2 += int64(a[2]) * int64(b[2])
		s3 += int64(a[3]) * int64(b[3])
	}
	for ; j < len(v); j++ {
		s0 += int64(qi[j]) * int64(v[j])
	}
	return s0 + s1 + s2 + s3
}
