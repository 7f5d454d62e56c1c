package retrieval

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokens splits text into index terms:
//
//   - Han, kana and Hangul runs give every character (unigram) and every
//     pair of adjacent characters (bigram), so Chinese needs no segmenter;
//     unigrams that carry no meaning on their own (的, 吗, 我…) are dropped,
//     and so are question-word bigrams (怎么, 可以, 如何, 请问…; see stopPair).
//   - Thai, Lao, Khmer and Myanmar, written without spaces between words,
//     give every pair of adjacent characters, each character with the
//     vowel signs and tone marks that follow it (a run of one character
//     gives that character): the same idea as for Chinese.
//   - Runs of other letters and digits give lowercase words; a combining
//     mark (a Devanagari vowel sign, an accent) stays in its word. English
//     stop words and single letters are dropped and the rest lightly
//     stemmed.
//   - Everything else (spaces, punctuation, symbols) separates terms.
//
// Full-width ASCII (Ａ, １) is folded to ASCII first. The same function
// serves documents and queries, so a stem need only be consistent, not a
// real word.
func tokens(text string) []string {
	var out []string
	eachToken(text, func(t string) { out = append(out, t) })
	return out
}

// eachToken calls emit with each term of text, in order (see tokens). CJK
// terms are substrings of text, so indexing them allocates nothing; emit
// must copy a term it keeps past the call if it cares.
func eachToken(text string, emit func(string)) {
	t := tokenizer{wordStart: -1}
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		t.take(text, i, r, emit)
		i += n
	}
	t.flushWord(text, len(text), emit)
	t.flushHan(text, len(text), emit)
	t.flushCont(text, len(text), emit)
}

// tokenizer is eachToken's state: the runs under way in its text. The
// text and emit are passed to its methods rather than held, so that the
// run offsets, which nothing keeps, need no heap.
type tokenizer struct {
	wordStart int   // byte offset of the current letter/digit run; -1: none
	wordFold  bool  // the run needs lowercasing or full-width folding
	hanOff    []int // byte offsets of the current CJK run's runes, plus its end
	contOff   []int // byte offsets of the current Thai-like run's characters, plus its end
}

// take adds r, the rune at byte offset i of text, to its run, ending the
// runs it does not belong to.
func (t *tokenizer) take(text string, i int, r rune, emit func(string)) {
	full := r >= 0xFF01 && r <= 0xFF5E // full-width ASCII
	if full {
		r -= 0xFEE0
	}
	switch {
	case isCJK(r):
		t.flushWord(text, i, emit)
		t.flushCont(text, i, emit)
		t.hanOff = append(t.hanOff, i)
	case isContinuous(r):
		if len(t.contOff) > 0 && unicode.Is(unicode.Mark, r) {
			break // a vowel sign or tone mark: part of the character before it
		}
		t.flushWord(text, i, emit)
		t.flushHan(text, i, emit)
		if (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mark, r)) && !thaiSign(r) {
			t.contOff = append(t.contOff, i)
		} else {
			t.flushCont(text, i, emit) // a sign such as ฯ, ๆ or ๏: a separator
		}
	case unicode.IsLetter(r) || unicode.IsDigit(r):
		t.flushHan(text, i, emit)
		t.flushCont(text, i, emit)
		if t.wordStart < 0 {
			t.wordStart, t.wordFold = i, false
		}
		if full || r >= utf8.RuneSelf || ('A' <= r && r <= 'Z') {
			t.wordFold = true
		}
	case (r == '\'' || r == '’') && t.wordStart >= 0:
	case t.wordStart >= 0 && r >= 0x300 && unicode.Is(unicode.Mark, r):
		t.wordFold = true // "रिफंड" is one word, not र, फ and ड
	default:
		t.flushWord(text, i, emit)
		t.flushHan(text, i, emit)
		t.flushCont(text, i, emit)
	}
}

// flushWord emits the term of the letter/digit run of text ending at end,
// if any.
func (t *tokenizer) flushWord(text string, end int, emit func(string)) {
	if t.wordStart < 0 {
		return
	}
	w := text[t.wordStart:end]
	t.wordStart = -1
	if t.wordFold {
		w = foldWord(w)
	}
	if i := strings.IndexAny(w, "'’"); i >= 0 { // don't -> don, shop's -> shop
		w = w[:i]
	}
	if term := englishTerm(w); term != "" {
		emit(term)
	}
}

// flushHan emits the characters and bigrams of the CJK run of text ending
// at end.
func (t *tokenizer) flushHan(text string, end int, emit func(string)) {
	if len(t.hanOff) == 0 {
		return
	}
	off := append(t.hanOff, end)
	for i := 0; i+1 < len(off); i++ {
		if r, _ := utf8.DecodeRuneInString(text[off[i]:]); !hanStop[r] {
			emit(text[off[i]:off[i+1]])
		}
		if i+2 < len(off) && !stopPair(text[off[i]:off[i+2]]) {
			emit(text[off[i]:off[i+2]])
		}
	}
	t.hanOff = off[:0]
}

// flushCont emits the character pairs of the Thai-like run of text ending
// at end (its one character, if it has only one).
func (t *tokenizer) flushCont(text string, end int, emit func(string)) {
	if len(t.contOff) == 0 {
		return
	}
	off := append(t.contOff, end)
	if len(off) == 2 {
		emit(text[off[0]:end])
	}
	for i := 0; i+2 < len(off); i++ {
		emit(text[off[i]:off[i+2]])
	}
	t.contOff = off[:0]
}

// isContinuous reports whether r belongs to a script written without
// spaces between words and outside CJK: Thai, Lao, Myanmar, Khmer.
func isContinuous(r rune) bool {
	return r >= 0x0E00 && r <= 0x0EFF || // Thai, Lao
		r >= 0x1000 && r <= 0x109F || // Myanmar
		r >= 0x1780 && r <= 0x17FF || // Khmer
		r >= 0x19E0 && r <= 0x19FF || // Khmer symbols
		r >= 0xA9E0 && r <= 0xA9FF || // Myanmar Extended-B
		r >= 0xAA60 && r <= 0xAA7F // Myanmar Extended-A
}

// thaiSign reports whether r is a Thai or Lao sign written as a letter
// that stands apart from words: ฯ and ຯ (abbreviation), ๆ and ໆ
// (repetition).
func thaiSign(r rune) bool {
	return r == 0x0E2F || r == 0x0E46 || r == 0x0EAF || r == 0x0EC6
}

// foldWord lowercases w and folds full-width ASCII to ASCII.
func foldWord(w string) string {
	return strings.Map(func(r rune) rune {
		if r >= 0xFF01 && r <= 0xFF5E {
			r -= 0xFEE0
		}
		return unicode.ToLower(r)
	}, w)
}

func isCJK(r rune) bool {
	if r < 0x2E80 { // below the CJK radicals: Latin, Greek, Cyrillic, symbols…
		return false
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// isUnigram reports whether term is a single CJK character.
func isUnigram(term string) bool {
	r, n := utf8.DecodeRuneInString(term)
	return n == len(term) && isCJK(r)
}

// englishTerm returns the index term for a lowercase word, or "" if the
// word is dropped.
func englishTerm(w string) string {
	w = strings.TrimRight(w, "'’")
	if englishStop[w] {
		return ""
	}
	if utf8.RuneCountInString(w) < 2 && !isDigits(w) {
		return ""
	}
	if isDigits(w) || !isASCIILetters(w) {
		return w
	}
	return stem(w)
}

// stem removes common English inflections: plural -s/-es/-ies, -ing, -ed,
// a final e, and a doubled final consonant, so that "ship", "ships",
// "shipped" and "shipping" share the term "ship", and "charge",
// "charged", "charging" share "charg".
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case len(w) > 4 && strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case len(w) > 3 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") ||
		strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "zes")):
		w = w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w = w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ed"):
		w = w[:len(w)-2]
	}
	if len(w) > 4 && w[len(w)-1] == 'e' {
		w = w[:len(w)-1]
	}
	if n := len(w); n > 3 && w[n-1] == w[n-2] && !isVowel(w[n-1]) {
		w = w[:n-1]
	}
	return w
}

func isVowel(c byte) bool { return strings.IndexByte("aeiouy", c) >= 0 }

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isASCIILetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

var englishStop = setOf(strings.Fields(`
a about above after again against all am an and any are aren as at be because
been before being below between both but by can cannot could couldn did didn do
does doesn doing don down during each few for from further had hadn has hasn
have haven having he her here hers herself him himself his how i if in into is
isn it its itself just let me more most my myself no nor not now of off on once
only or other ought our ours ourselves out over own please same shan she should
shouldn so some such than that the their theirs them themselves then there these
they this those through to too under until up very via was wasn we were weren
what when where which while who whom why will with won would wouldn you your
yours yourself yourselves get got still also ll re ve
many much good first last take takes took taking mean means meant need needs
want wants like know tell way thing things something someone anything possible
really sure kind long
`))

// hanStop holds characters dropped as unigrams (they still form bigrams):
// particles, pronouns and question words that say nothing about the topic
// (办 is the 办 of 怎么办; 办理 still counts as a bigram).
var hanStop = func() map[rune]bool {
	m := make(map[rune]bool)
	for _, r := range "的了吗呢吧啊呀么是在我你您他她它们这那和与及或也都就要会能可以把被给让有怎什哪个一之如何为些办" {
		m[r] = true
	}
	return m
}()

// hanStopPairs holds question-word bigrams dropped besides those made of
// two hanStop characters (怎么, 什么, 可以…).
var hanStopPairs = setOf([]string{"怎样", "请问", "多少"})

// stopPair reports whether the CJK bigram b says nothing about the topic:
// both its characters are in hanStop, or it is in hanStopPairs.
func stopPair(b string) bool {
	r1, n := utf8.DecodeRuneInString(b)
	r2, _ := utf8.DecodeRuneInString(b[n:])
	return hanStop[r1] && hanStop[r2] || hanStopPairs[b]
}

func setOf(words []string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
