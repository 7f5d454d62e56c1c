package retrieval

import "math"

// DefaultMinRelevance is the HybridConfig.MinRelevance used when the field
// is zero: a document enters the results through vector search alone only
// if its similarity to the question stands 5 standard deviations above
// the question's mean similarity to the corpus. Over testdata/kb (73
// documents), the highest standing any of 1,000 nonsense questions
// reaches is 4.1 under an embedder without signal and 4.4 under a dense
// one with signal (TestStandingFigures); the article answering an
// in-domain question stands at 2.3 in the median under the latter, so
// vector-only hits are rare and lexical hits carry the recall. No corpus
// of 25 documents or fewer can reach it (the highest standing among n is
// (n-1)/sqrt(n)).
const DefaultMinRelevance = 5.0

// fullStanding is the standing at which a document gets the whole vector
// share of the blended score; below it the share shrinks in proportion,
// down to nothing at or below the corpus mean.
const fullStanding = 4.0

// standing holds the similarities of a question to the documents of a pool
// and their spread: the relevance scale of one question under one
// embedder, whatever the embedder's own scale.
type standing struct {
	cos      []float64 // cosine similarity per pool document, 0 for a non-finite one
	mean, sd float64
}

// newStanding computes the cosines of qv to each vector of dv and their
// mean and standard deviation. It returns errDimension if a vector's
// length differs from qv's.
func newStanding(qv []float32, dv [][]float32) (standing, error) {
	s := standing{cos: make([]float64, len(dv))}
	for i, v := range dv {
		if len(v) != len(qv) {
			return standing{}, errDimension
		}
		s.cos[i] = cosine(qv, v)
		s.mean += s.cos[i]
	}
	if len(dv) == 0 {
		return s, nil
	}
	s.mean /= float64(len(dv))
	for _, c := range s.cos {
		s.sd += (c - s.mean) * (c - s.mean)
	}
	s.sd = math.Sqrt(s.sd / float64(len(dv)))
	return s, nil
}

// z returns how many standard deviations document i's similarity stands
// above the mean; 0 when every document is as similar as the others.
func (s standing) z(i int) float64 {
	if s.sd == 0 || math.IsNaN(s.sd) {
		return 0
	}
	return (s.cos[i] - s.mean) / s.sd
}

// share returns document i's vector share of the blended score, in [0, 1]:
// its standing over fullStanding, clamped.
func (s standing) share(i int) float64 {
	return min(max(s.z(i)/fullStanding, 0), 1)
}

// cosine returns the cosine similarity of a and b, or 0 when either is zero
// or has a NaN or infinite component: a NaN would compare false with
// every floor and so let any document in.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	if c := dot / math.Sqrt(na*nb); !math.IsNaN(c) && !math.IsInf(c, 0) {
		return c
	}
	return 0
}
