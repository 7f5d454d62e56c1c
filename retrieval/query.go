package retrieval

import (
	"math/bits"
	"unicode/utf8"
)

// maxUnits bounds the content units of a question that the relevance
// floor weighs (the bits of a uint64); later units are not counted.
const maxUnits = 64

// query is a parsed question: its search terms and the content units the
// relevance floor weighs.
type query struct {
	// terms are the distinct terms in first-seen order (so scores add up
	// in the same order every time), then synonyms of those terms.
	terms []string
	// weights holds each term's number of occurrences, or synonymWeight
	// for an added synonym.
	weights []float64
	// covers holds, per term, the units a document containing the term
	// covers (bit i is units[i]).
	covers []uint64
	// weak marks terms whose match counts only as a body match: single
	// Chinese characters that are also part of a bigram of the question.
	weak []bool
	// units are the question's content units: each English term and each
	// Chinese character outside hanStop, at most maxUnits.
	units []string
	// unitScale, when not nil, scales each unit's weight in the relevance
	// floor (a follow-up's context units weigh less); nil means 1 for all.
	unitScale []float64
	// own, when not zero, marks the units of the question itself in a
	// follow-up's query: a document covering enough of them passes the
	// floor whatever it covers of the earlier turns.
	own uint64
}

// accumulators are the per-document sums of one query, indexed by
// document; Retrieve leaves them zero.
type accumulators struct {
	score       []float64
	covered     []uint64 // units covered, as query.covers bits
	headCovered []uint64 // units covered by the title or tags
}

// bodyShare is how much a unit covered only by a document's body (or only
// by a single Chinese character, see query.weak) counts towards coverage,
// against 1 for a unit covered by its title or tags.
const bodyShare = 0.3

// parseQuery splits text into query terms and content units. An English
// term covers its own unit, and a synonym covers the unit of the word it
// stands for. A Chinese bigram covers its two characters; a single
// character covers itself only if no bigram of the question contains it,
// so a character matched on its own (企 of 企业 for 企鹅) does not count.
func parseQuery(text string) query {
	all := tokens(text)
	var q query
	unitOf := make(map[string]int)
	unit := func(u string) uint64 {
		i, ok := unitOf[u]
		if !ok {
			if len(q.units) == maxUnits {
				return 0
			}
			i = len(q.units)
			unitOf[u] = i
			q.units = append(q.units, u)
		}
		return 1 << i
	}
	inBigram := make(map[rune]bool)
	for _, t := range all {
		if r1, r2, ok := cjkPair(t); ok {
			inBigram[r1], inBigram[r2] = true, true
		}
	}
	seen := make(map[string]int, len(all))
	add := func(t string, w float64, cov uint64, weak bool) {
		if i, ok := seen[t]; ok {
			q.weights[i] += w
			q.covers[i] |= cov
			return
		}
		seen[t] = len(q.terms)
		q.terms = append(q.terms, t)
		q.weights = append(q.weights, w)
		q.covers = append(q.covers, cov)
		q.weak = append(q.weak, weak)
	}
	for _, t := range all {
		var cov uint64
		weak := false
		if r1, r2, ok := cjkPair(t); ok {
			n := utf8.RuneLen(r1)
			if !hanStop[r1] {
				cov |= unit(t[:n])
			}
			if !hanStop[r2] {
				cov |= unit(t[n:])
			}
		} else {
			r, _ := utf8.DecodeRuneInString(t)
			weak = isUnigram(t) && inBigram[r]
			cov = unit(t)
		}
		add(t, 1, cov, weak)
	}
	for _, t := range all {
		cov := q.covers[seen[t]]
		for _, s := range synonyms[t] {
			if i, ok := seen[s]; ok {
				q.covers[i] |= cov // either word covers both
				continue
			}
			add(s, synonymWeight, cov, false)
		}
	}
	return q
}

// cjkPair returns the two characters of a CJK bigram term.
func cjkPair(t string) (r1, r2 rune, ok bool) {
	r1, n := utf8.DecodeRuneInString(t)
	if n == len(t) || !isCJK(r1) {
		return 0, 0, false
	}
	r2, m := utf8.DecodeRuneInString(t[n:])
	return r1, r2, n+m == len(t) && isCJK(r2)
}

// relevant returns the documents of touched that cover at least minCov
// of q's unit weight, where a unit weighs its IDF in the index (the
// highest for a unit no document has) and counts in full when covered by
// a document's title or tags, at bodyShare when covered only by its body.
// A unit's weight is scaled by q.unitScale; with q.own set, a document
// that covers minCov of the own units' weight passes too, so the units of
// a follow-up's earlier turns can let documents in but never keep one out.
func (ix *Index) relevant(q query, touched []int32, acc *accumulators, minCov float64) []int32 {
	if minCov <= 0 || len(q.units) == 0 {
		return touched
	}
	uw := make([]float64, len(q.units))
	for i, u := range q.units {
		uw[i] = ix.idf(len(ix.postingsOf(u)))
		if q.unitScale != nil {
			uw[i] *= q.unitScale[i]
		}
	}
	all := uint64(1)<<len(q.units) - 1 // every unit; 64 units shift to 0, which wraps to all ones
	total, ownTotal := weigh(all, 0, uw), weigh(q.own, 0, uw)
	var out []int32
	for _, d := range touched {
		head, body := acc.headCovered[d], acc.covered[d]&^acc.headCovered[d]
		if weigh(head, body, uw) >= minCov*total ||
			q.own != 0 && weigh(head&q.own, body&q.own, uw) >= minCov*ownTotal {
			out = append(out, d)
		}
	}
	return out
}

// weigh returns the weight of the units covered in head (in full) and in
// body (at bodyShare), where unit i weighs uw[i].
func weigh(head, body uint64, uw []float64) float64 {
	got := 0.0
	for m := head; m != 0; m &= m - 1 {
		got += uw[bits.TrailingZeros64(m)]
	}
	for m := body; m != 0; m &= m - 1 {
		got += bodyShare * uw[bits.TrailingZeros64(m)]
	}
	return got
}
