package cache

import (
	"slices"
	"strings"
)

// maxMinorEdit is the largest content difference the false-hit guard treats
// as a minor edit of the same question (and therefore rejects): a Latin word
// counts 1, a Han character ½, so two swapped words or up to four Han
// characters.
const maxMinorEdit = 2.0

// signature is what the false-hit guard compares between a question and a
// cached one.
type signature struct {
	nums    []string // normalized numbers in order ("七天" and "7天" give "7")
	syms    []string // symbols in order ("$", "€", "👍")
	pol     uint8    // polarity classes present (negation, cancel)
	words   []uint64 // hashes of content words, sorted, unique
	hanRune []uint64 // hashes of content Han characters, sorted, unique
}

// signatureOf extracts the signature of question.
func signatureOf(question string) signature {
	var s signature
	sc := newScanner(question)
	for {
		t, ok := sc.next()
		if !ok {
			break
		}
		s.pol |= t.pol
		switch {
		case t.kind == tokNumber:
			s.nums = append(s.nums, string(t.text))
		case t.kind == tokSymbol:
			s.syms = append(s.syms, string(t.text))
		case t.pol != 0, t.kind == tokStop, t.kind == tokHanStop:
			// Polarity is compared on its own; stopwords do not count.
		case t.kind == tokWord:
			s.words = append(s.words, hashBytes(fWord, t.text))
		case t.kind == tokHan:
			s.hanRune = append(s.hanRune, hashBytes(fHan, t.text))
		}
	}
	slices.Sort(s.words)
	slices.Sort(s.hanRune)
	s.words = slices.Compact(s.words)
	s.hanRune = slices.Compact(s.hanRune)
	return s
}

// compatible reports whether an answer cached for b may answer a: the
// numbers, the symbols and the polarity must agree, and the content words
// may not differ by a minor edit (a swapped or added entity). Identical
// content passes; larger rewordings are left to the similarity threshold.
func (a signature) compatible(b signature) bool {
	if a.pol != b.pol || !slices.Equal(a.nums, b.nums) || !slices.Equal(a.syms, b.syms) {
		return false
	}
	d := float64(symDiff(a.words, b.words)) + 0.5*float64(symDiff(a.hanRune, b.hanRune))
	return d == 0 || d > maxMinorEdit
}

// symDiff counts the elements of sorted unique a and b found in only one.
func symDiff(a, b []uint64) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			i++
			j++
		case a[i] < b[j]:
			n++
			i++
		default:
			n++
			j++
		}
	}
	return n + len(a) - i + len(b) - j
}

// Compatible reports whether an answer cached for question cached may be
// served for question asked, by the false-hit guard described in the package
// documentation. The cache applies it to every similarity hit; it is
// exported so that other components (and tests) can explain a miss.
func Compatible(asked, cached string) bool {
	if strings.EqualFold(asked, cached) {
		return true
	}
	return signatureOf(asked).compatible(signatureOf(cached))
}
