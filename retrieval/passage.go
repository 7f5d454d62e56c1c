package retrieval

import (
	"math"
	"strings"
	"unicode/utf8"
)

// Passage is a part of a document's text quoted for a question.
type Passage struct {
	Text string // the passage, cut to the asked length on a word or rune boundary
	// Start and End are the byte offsets of the passage in the document's
	// text before any cut: Start > 0 or End < len(text) means there is
	// more before or after it.
	Start, End int
}

// BestPassage returns the passage of doc.Text that answers query best, of
// at most maxRunes characters (default 280 if maxRunes <= 0): the
// paragraph, or the window of consecutive sentences of a longer
// paragraph, that scores highest by BM25 over the document's passages for
// the question's terms and their synonyms, as Index ranks documents.
// Ties go to the earlier passage; when no passage shares a term with the
// question, the text's opening is returned. It is safe for concurrent use.
func BestPassage(query string, doc Doc, maxRunes int) Passage {
	if maxRunes <= 0 {
		maxRunes = 280
	}
	spans := passageSpans(doc.Text, maxRunes)
	if len(spans) == 0 {
		return Passage{}
	}
	best := 0
	if q := parseQuery(query); len(q.terms) > 0 {
		scores := scorePassages(q, doc.Text, spans)
		for i, s := range scores {
			if s > scores[best] {
				best = i
			}
		}
	}
	sp := extend(doc.Text, spans, best, maxRunes)
	return Passage{Text: clipRunes(strings.TrimSpace(doc.Text[sp[0]:sp[1]]), maxRunes), Start: sp[0], End: sp[1]}
}

// extend returns spans[i], joined with the spans after it while they fit
// in maxRunes, if it ends in a colon (it introduces what follows, such as
// a list) or is shorter than a sixth of maxRunes (a heading, a fragment).
func extend(text string, spans [][2]int, i, maxRunes int) [2]int {
	sp := spans[i]
	for j := i + 1; j < len(spans) && spans[j][0] >= sp[1]; j++ {
		s := strings.TrimSpace(text[sp[0]:sp[1]])
		if !strings.HasSuffix(s, ":") && !strings.HasSuffix(s, "：") && utf8.RuneCountInString(s)*6 >= maxRunes {
			break
		}
		if utf8.RuneCountInString(text[sp[0]:spans[j][1]]) > maxRunes {
			if strings.HasSuffix(s, ":") || strings.HasSuffix(s, "：") {
				sp[1] = spans[j][1] // an introduction goes with what it introduces, cut to fit
			}
			break
		}
		sp[1] = spans[j][1]
	}
	return sp
}

// scorePassages returns the BM25 score of each span of text for q, the
// spans standing for the documents of a corpus.
func scorePassages(q query, text string, spans [][2]int) []float64 {
	tf := make([]map[string]float64, len(spans))
	df := make(map[string]int)
	lens := make([]float64, len(spans))
	total := 0.0
	for i, sp := range spans {
		tf[i] = make(map[string]float64)
		eachToken(text[sp[0]:sp[1]], func(t string) { // t lives as long as text
			if tf[i][t] == 0 {
				df[t]++
			}
			tf[i][t]++
			lens[i]++
		})
		total += lens[i]
	}
	avg := max(total/float64(len(spans)), 1)
	n := float64(len(spans))
	scores := make([]float64, len(spans))
	for j, t := range q.terms {
		if df[t] == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
		for i := range spans {
			if f := tf[i][t]; f > 0 {
				norm := bm25K1 * (1 - bm25B + bm25B*lens[i]/avg)
				scores[i] += q.weights[j] * idf * f * (bm25K1 + 1) / (f + norm)
			}
		}
	}
	return scores
}

// passageSpans splits text into passages: its paragraphs (separated by
// blank lines), and for a paragraph longer than maxRunes, every window of
// consecutive sentences that fits in maxRunes (a sentence longer than that
// is a window of its own). Spans are byte offsets, in order.
func passageSpans(text string, maxRunes int) [][2]int {
	var out [][2]int
	for _, p := range paragraphs(text) {
		if utf8.RuneCountInString(text[p[0]:p[1]]) <= maxRunes {
			out = append(out, p)
			continue
		}
		sents := sentences(text, p)
		// at[i] is the rune offset of the end of sentence i from the
		// paragraph's start, so a window's length is a difference.
		at := make([]int, len(sents))
		n, prev := 0, p[0]
		for i, sn := range sents {
			n += utf8.RuneCountInString(text[prev:sn[1]])
			at[i], prev = n, sn[1]
		}
		end := 0
		for i := range sents {
			startAt := 0
			if i > 0 {
				startAt = at[i-1] + utf8.RuneCountInString(text[sents[i-1][1]:sents[i][0]])
			}
			end = max(end, i)
			for end+1 < len(sents) && at[end+1]-startAt <= maxRunes {
				end++
			}
			out = append(out, [2]int{sents[i][0], sents[end][1]})
		}
	}
	return out
}

// paragraphs returns the spans of the runs of non-blank lines of text.
func paragraphs(text string) [][2]int {
	var out [][2]int
	start, last := -1, 0 // the open paragraph's start and the end of its last line
	for i := 0; ; {
		end := len(text)
		if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
			end = i + j
		}
		switch blank := strings.TrimSpace(text[i:end]) == ""; {
		case !blank && start < 0:
			start, last = i, end
		case !blank:
			last = end
		case start >= 0:
			out = append(out, [2]int{start, last})
			start = -1
		}
		if end == len(text) {
			break
		}
		i = end + 1
	}
	if start >= 0 {
		out = append(out, [2]int{start, last})
	}
	return out
}

// sentences returns the spans of the sentences of paragraph p of text: each
// ends after a sentence mark (. ! ? ; and their full-width forms) followed
// by a space, a line break or the end, or after a line break.
func sentences(text string, p [2]int) [][2]int {
	var out [][2]int
	start := p[0]
	for i := p[0]; i < p[1]; {
		r, n := utf8.DecodeRuneInString(text[i:])
		i += n
		end := false
		switch r {
		case '。', '！', '？', '；', '\n':
			end = true
		case '.', '!', '?', ';':
			end = i >= p[1] || text[i] == ' ' || text[i] == '\n'
		}
		if end || i >= p[1] {
			if strings.TrimSpace(text[start:i]) != "" {
				out = append(out, [2]int{start, i})
			}
			start = i
		}
	}
	return out
}

// clipRunes cuts s to at most n runes, at the last space within the limit
// if there is one in its second half, and marks the cut with "…".
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut, runes := 0, 0
	for i := range s {
		if runes == n-1 {
			cut = i
			break
		}
		runes++
	}
	if sp := strings.LastIndexByte(s[:cut], ' '); sp > cut/2 {
		cut = sp
	}
	return strings.TrimRight(s[:cut], " ,;:，、") + "…"
}
