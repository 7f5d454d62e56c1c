package llmtest

import (
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// isCJK reports whether r is written without spaces between words, so
// that each rune counts as one token.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// pieces splits s into tokens whose concatenation is s: each CJK rune is a
// piece, and so is each other run of non-space runes with the spaces after
// it. Leading spaces stick to the first piece.
func pieces(s string) []string {
	var out []string
	start := 0
	inWord := false // the current piece has a non-space, non-CJK rune
	for i, r := range s {
		switch {
		case isCJK(r):
			if i > start && hasNonSpace(s[start:i]) {
				out = append(out, s[start:i])
				start = i
			}
			out = append(out, s[start:i+len(string(r))])
			start = i + len(string(r))
			inWord = false
		case unicode.IsSpace(r):
			inWord = false
		default:
			if !inWord && i > start && hasNonSpace(s[start:i]) {
				out = append(out, s[start:i])
				start = i
			}
			inWord = true
		}
	}
	if start < len(s) {
		if len(out) > 0 && !hasNonSpace(s[start:]) {
			out[len(out)-1] += s[start:]
		} else {
			out = append(out, s[start:])
		}
	}
	return out
}

func hasNonSpace(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) }) >= 0
}

// countTokens approximates the token count of s.
func countTokens(s string) int { return len(pieces(s)) }

// docMarkers start a line that introduces the documents of a RAG prompt.
var docMarkers = []string{"documents", "document", "context", "knowledge base", "references",
	"sources", "参考资料", "参考文档", "文档", "资料", "知识库"}

// questionMarkers start a line that introduces the question itself.
var questionMarkers = []string{"question", "问题", "用户问题"}

// afterMarker reports whether line starts with one of markers followed by
// a colon, and returns the text after the colon.
func afterMarker(line string, markers []string) (string, bool) {
	l := strings.ToLower(strings.TrimLeft(line, " \t#*>-"))
	for _, m := range markers {
		if !strings.HasPrefix(l, m) {
			continue
		}
		rest := strings.TrimSpace(l[len(m):])
		if strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "：") {
			// Cut the original line at the same place to keep its case.
			orig := strings.TrimLeft(line, " \t#*>-")
			i := strings.IndexAny(orig, ":：")
			if i < 0 {
				return "", false
			}
			_, size := firstRune(orig[i:])
			return strings.TrimSpace(orig[i+size:]), true
		}
	}
	return "", false
}

func firstRune(s string) (rune, int) {
	for _, r := range s {
		return r, len(string(r))
	}
	return 0, 0
}

// docTitle returns the first line after a documents marker in any of
// texts, cleaned of list numbering, or "".
func docTitle(texts []string) string {
	for _, t := range texts {
		lines := strings.Split(t, "\n")
		for i, line := range lines {
			rest, ok := afterMarker(line, docMarkers)
			if !ok {
				continue
			}
			if rest != "" {
				return cleanTitle(rest)
			}
			for _, next := range lines[i+1:] {
				if c := cleanTitle(next); c != "" {
					return c
				}
			}
		}
	}
	return ""
}

// cleanTitle strips list numbering ("[1]", "1.", "-") and a "Title:" label.
func cleanTitle(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimLeft(s, "-*#> \t")
	if strings.HasPrefix(s, "[") {
		if i := strings.Index(s, "]"); i >= 0 && i < 8 {
			s = s[i+1:]
		}
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && (s[i] == '.' || s[i] == ')') {
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	for _, label := range []string{"title:", "标题：", "标题:"} {
		if len(s) >= len(label) && strings.EqualFold(s[:len(label)], label) {
			s = strings.TrimSpace(s[len(label):])
		}
	}
	return s
}

// question returns the question in the last user message: the text after
// a "Question:" line if there is one, else the whole message.
func question(user string) string {
	lines := strings.Split(user, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if rest, ok := afterMarker(lines[i], questionMarkers); ok {
			return strings.TrimSpace(rest + " " + strings.Join(lines[i+1:], " "))
		}
	}
	return strings.Join(strings.Fields(user), " ")
}

// truncate keeps at most n tokens of s, marking a cut with "…".
func truncate(s string, n int) string {
	p := pieces(strings.TrimSpace(s))
	if len(p) <= n {
		return strings.TrimSpace(strings.Join(p, ""))
	}
	return strings.TrimSpace(strings.Join(p[:n], "")) + "…"
}

// answerText builds the deterministic answer of model to a prompt whose
// last user message is user and whose messages are texts.
func answerText(model, user string, texts []string) string {
	q := truncate(question(user), 16)
	if q == "" {
		q = "(empty question)"
	}
	title := truncate(docTitle(texts), 8)
	zh := strings.IndexFunc(q, isCJK) >= 0
	var b strings.Builder
	b.WriteString("[" + model + "] ")
	switch {
	case zh && title != "":
		b.WriteString("根据《" + title + "》，这是对“" + q + "”的模拟回答。")
	case zh:
		b.WriteString("这是对“" + q + "”的模拟回答。")
	case title != "":
		b.WriteString("According to " + title + ", this is a simulated answer to: " + q)
	default:
		b.WriteString("This is a simulated answer to your question: " + q)
	}
	return b.String()
}

// embed returns a deterministic unit vector of length dim for text, by
// feature hashing of its lower-cased words, CJK runes and CJK bigrams.
func embed(text string, dim int) []float32 {
	v := make([]float64, dim)
	add := func(feature string) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(feature))
		x := h.Sum64()
		sign := 1.0
		if x>>63 == 1 {
			sign = -1
		}
		v[int(x%uint64(dim))] += sign
	}
	var prev rune
	for _, p := range pieces(strings.ToLower(text)) {
		w := strings.TrimFunc(strings.TrimSpace(p), func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) })
		if w == "" {
			prev = 0
			continue
		}
		add(w)
		r, _ := firstRune(w)
		if isCJK(r) && prev != 0 {
			add(string([]rune{prev, r}))
		}
		if isCJK(r) {
			prev = r
		} else {
			prev = 0
		}
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, dim)
	if norm == 0 {
		out[0] = 1
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}
