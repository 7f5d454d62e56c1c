package cache

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a token produced by scanner.
type tokKind uint8

const (
	tokWord    tokKind = iota + 1 // a Latin (or other non-Han) word, lowercased
	tokStop                       // a Latin stopword ("how", "the", "please")
	tokNumber                     // a number: Arabic digits, or Chinese numerals before a unit
	tokHan                        // one Han character that is not part of a stop phrase
	tokHanStop                    // a Han stop phrase ("如何", "请问", "能不能")
	tokSymbol                     // one symbol rune: a currency sign, an emoji, a math sign
)

// Polarity classes of the false-hit guard.
const (
	polNeg    uint8 = 1 << iota // not, no, never, without, n't, 不, 没, 无, 未, 别, 非
	polCancel                   // cancel, unsubscribe, revoke, stop, 取消, 退订, 撤销, 停止
)

// token is one unit of a question. Its byte slices point into the scanner and
// are valid until the next call of next.
type token struct {
	kind tokKind
	text []byte // lowercased word, stemmed for tokWord; the normalized number; the Han rune(s); the symbol
	raw  []byte // tokWord: lowercased, unstemmed
	pol  uint8  // polarity class, if the token is a negation or cancel word
	// brk reports that a boundary bigrams must not cross (punctuation, a
	// number) came right before this token. Stopwords do not break bigrams.
	brk bool
}

// scanner splits a question into tokens, without allocating unless a word is
// longer than its buffers. The zero value is not usable: use newScanner.
type scanner struct {
	s   string
	i   int
	brk bool
	buf [64]byte
	raw [64]byte
}

func newScanner(s string) scanner { return scanner{s: s, brk: true} }

// next returns the next token, or false at the end of the text.
func (sc *scanner) next() (token, bool) {
	for sc.i < len(sc.s) {
		r, n := utf8.DecodeRuneInString(sc.s[sc.i:])
		r = widen(r)
		switch {
		case unicode.Is(unicode.Han, r):
			return sc.han(), true
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			return sc.word(), true
		case unicode.IsSymbol(r):
			t := token{kind: tokSymbol, text: utf8.AppendRune(sc.buf[:0], r), brk: sc.brk}
			sc.i += n
			sc.brk = true
			return t, true
		default:
			// Punctuation, space, and a combining mark that follows no
			// word (such as the variation selector of an emoji).
			sc.i += n
			sc.brk = true
		}
	}
	return token{}, false
}

// widen maps full-width ASCII forms (ＡＢＣ１２３) to ASCII, and the
// full-width signs (￥) to their usual forms (¥).
func widen(r rune) rune {
	if r >= 0xFF01 && r <= 0xFF5E {
		return r - 0xFEE0
	}
	if r >= 0xFFE0 && r <= 0xFFE6 { // ￠ ￡ ￢ ￣ ￤ ￥ ￦: the full-width signs a Chinese keyboard types
		return fullWidthSigns[r-0xFFE0]
	}
	return r
}

// fullWidthSigns are the half-width forms of U+FFE0 to U+FFE6.
var fullWidthSigns = [...]rune{'¢', '£', '¬', '¯', '¦', '¥', '₩'}

// word returns the next word or number. A word longer than sc.buf is
// copied to the heap rather than cut, so that Normalize keeps all of it.
func (sc *scanner) word() token {
	w, digits := sc.buf[:0], true
	for sc.i < len(sc.s) {
		r, n := utf8.DecodeRuneInString(sc.s[sc.i:])
		r = widen(r)
		if r == '\'' || r == '’' {
			// Keep an apostrophe inside a word: "can't", "don't".
			if sc.i+n < len(sc.s) && len(w) > 0 {
				nr, _ := utf8.DecodeRuneInString(sc.s[sc.i+n:])
				if unicode.IsLetter(nr) {
					w = append(w, '\'')
					sc.i += n
					digits = false
					continue
				}
			}
			break
		}
		// A combining mark (a Devanagari or Thai vowel sign, an accent)
		// belongs to the word it follows; after a number it ends it.
		mark := r >= 0x300 && !digits && unicode.Is(unicode.Mark, r)
		if unicode.Is(unicode.Han, r) || !(unicode.IsLetter(r) || unicode.IsDigit(r) || mark || r == '.' && digits && len(w) > 0) {
			break
		}
		if r == '.' {
			// A decimal point only between digits.
			if sc.i+n >= len(sc.s) || !isDigit(sc.s[sc.i+n]) {
				break
			}
		}
		if !unicode.IsDigit(r) && r != '.' {
			digits = false
		}
		w = utf8.AppendRune(w, unicode.ToLower(r))
		sc.i += n
	}
	t := token{brk: sc.brk}
	sc.brk = false
	if digits {
		t.kind = tokNumber
		t.text = trimZeros(w)
		sc.brk = true
		return t
	}
	t.raw = append(sc.raw[:0], w...) // stem changes w in place
	if p, ok := enPolarity[string(w)]; ok {
		t.pol = p
	} else if len(w) > 3 && strings.HasSuffix(string(w), "n't") {
		t.pol = polNeg
	}
	if _, ok := enStop[string(w)]; ok && t.pol == 0 {
		t.kind = tokStop
		t.text = w
		return t
	}
	t.kind = tokWord
	t.text = stem(w)
	return t
}

// han returns the next Han token: a stop phrase, a Chinese number before a
// unit, or one character.
func (sc *scanner) han() token {
	t := token{brk: sc.brk}
	sc.brk = false
	rest := sc.s[sc.i:]
	// Longest stop phrase first (Han runes are three bytes in UTF-8).
	for k := 4; k >= 1; k-- {
		if len(rest) < 3*k {
			continue
		}
		if _, ok := zhStop[rest[:3*k]]; ok {
			t.kind = tokHanStop
			t.text = append(sc.buf[:0], rest[:3*k]...)
			sc.i += 3 * k
			return t
		}
	}
	for k := 2; k >= 1; k-- {
		if len(rest) < 3*k {
			continue
		}
		if p, ok := zhPolarity[rest[:3*k]]; ok {
			t.kind = tokHan
			t.pol = p
			t.text = append(sc.buf[:0], rest[:3*k]...)
			sc.i += 3 * k
			return t
		}
	}
	if v, n, ok := zhNumber(rest); ok {
		t.kind = tokNumber
		t.text = strconv.AppendUint(sc.buf[:0], v, 10)
		sc.i += n
		sc.brk = true
		return t
	}
	_, n := utf8.DecodeRuneInString(rest)
	t.kind = tokHan
	t.text = append(sc.buf[:0], rest[:n]...)
	sc.i += n
	return t
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func trimZeros(w []byte) []byte {
	for len(w) > 1 && w[0] == '0' && w[1] != '.' {
		w = w[1:]
	}
	return w
}

// stem strips a plural or possessive ending: "returns" -> "return",
// "order's" -> "order". It leaves "address" and short words alone.
func stem(w []byte) []byte {
	n := len(w)
	switch {
	case n > 2 && w[n-2] == '\'' && w[n-1] == 's':
		return w[:n-2]
	case n > 4 && string(w[n-3:]) == "ies":
		w[n-3] = 'y'
		return w[:n-2]
	case n > 3 && w[n-1] == 's' && w[n-2] != 's' && w[n-2] != 'u' && w[n-2] != 'i':
		return w[:n-1]
	}
	return w
}

// zhNumber parses Chinese numerals at the start of s when they are followed
// by a unit ("七天", "三十日", "两个"), returning the value and the bytes of
// the numerals.
func zhNumber(s string) (v uint64, n int, ok bool) {
	var section, unitSeen uint64
	i := 0
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		d, isDig := zhDigits[r]
		m, isMul := zhMults[r]
		switch {
		case isDig:
			unitSeen = d
		case isMul:
			// A multiplier with no digit before it counts once ("十天",
			// "万元"); before 万 that holds only when no smaller
			// multiplier came first ("十万" is 100000, not 110000).
			if m >= 10000 {
				if section == 0 && unitSeen == 0 {
					unitSeen = 1
				}
				v += (section + unitSeen) * m
				section = 0
			} else {
				if unitSeen == 0 {
					unitSeen = 1
				}
				section += unitSeen * m
			}
			unitSeen = 0
		default:
			if i == 0 {
				return 0, 0, false
			}
			if _, unit := zhUnits[r]; !unit {
				return 0, 0, false
			}
			return v + section + unitSeen, i, true
		}
		i += w
	}
	return 0, 0, false
}

var zhDigits = map[rune]uint64{'零': 0, '〇': 0, '一': 1, '二': 2, '两': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}

var zhMults = map[rune]uint64{'十': 10, '百': 100, '千': 1000, '万': 10000}

var zhUnits = map[rune]struct{}{
	'天': {}, '日': {}, '周': {}, '月': {}, '年': {}, '个': {}, '件': {}, '次': {},
	'元': {}, '块': {}, '小': {}, '分': {}, '秒': {}, '号': {}, '岁': {}, '张': {}, '台': {}, '单': {}, '倍': {}, '折': {},
}

func set(words ...string) map[string]struct{} {
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
	}
	return m
}

// enStop are English words that carry little meaning in a support question.
var enStop = set("a", "an", "the", "i", "me", "my", "mine", "we", "us", "our", "you", "your",
	"he", "she", "it", "its", "they", "them", "their", "is", "are", "was", "were", "be", "been",
	"am", "do", "does", "did", "can", "could", "would", "should", "will", "shall", "may", "might",
	"must", "have", "has", "had", "how", "what", "which", "who", "to", "of", "in", "on", "at",
	"by", "for", "with", "from", "about", "into", "as", "and", "or", "but", "if", "so", "that",
	"this", "these", "those", "there", "here", "please", "hi", "hello", "thanks", "thank", "any",
	"some", "just", "want", "need", "like", "way", "possible", "able", "i'm", "i'd", "i've", "it's",
	"what's", "how's", "get", "got", "let", "tell", "know", "pls", "plz", "kindly", "also", "still")

// enPolarity are English negation and cancel words.
var enPolarity = map[string]uint8{
	"not": polNeg, "no": polNeg, "never": polNeg, "without": polNeg, "cannot": polNeg,
	"nor": polNeg, "none": polNeg, "dont": polNeg, "cant": polNeg, "wont": polNeg,
	"doesnt": polNeg, "didnt": polNeg, "isnt": polNeg, "unable": polNeg, "non": polNeg,
	"cancel": polCancel, "canceled": polCancel, "cancelled": polCancel, "canceling": polCancel,
	"cancelling": polCancel, "cancellation": polCancel, "unsubscribe": polCancel,
	"revoke": polCancel, "stop": polCancel, "terminate": polCancel, "undo": polCancel,
	"withdraw": polCancel, "disable": polCancel, "remove": polCancel, "delete": polCancel,
}

// zhStop are Chinese phrases that carry little meaning in a support question.
// Question forms that contain a negation character ("能不能", "是不是") are
// listed so that they are not read as negations.
var zhStop = set("请问", "如何", "怎么", "怎样", "怎么样", "怎么办", "我的", "我们", "我", "你们",
	"你", "您", "的", "了", "吗", "呢", "吧", "啊", "呀", "嘛", "是", "可以", "能", "能否",
	"能不能", "可不可以", "是不是", "有没有", "要不要", "会不会", "一下", "麻烦", "想", "想要",
	"需要", "应该", "该", "要", "去", "在", "哪里", "什么", "请", "帮", "帮我", "给", "把", "呃", "那", "这", "这个", "那个",
	"才", "就", "还", "都", "也", "又", "得")

// zhPolarity are Chinese negation and cancel words.
var zhPolarity = map[string]uint8{
	"不": polNeg, "没": polNeg, "无": polNeg, "未": polNeg, "别": polNeg, "非": polNeg,
	"勿": polNeg, "莫": polNeg, "取消": polCancel, "退订": polCancel, "撤销": polCancel,
	"撤回": polCancel, "停止": polCancel, "终止": polCancel, "解绑": polCancel, "注销": polCancel,
	"删除": polCancel, "关闭": polCancel,
}

// Normalize returns the canonical form of a question used for exact-match
// lookups: lowercased, full-width forms folded, punctuation dropped, words
// separated by one space, numbers normalized ("七天" and "7天" agree).
// Combining marks stay in their word ("दिन" and "दान" differ), and each
// symbol ("$", "€", "👍") is a word of its own. A question of nothing but
// punctuation and spaces normalizes to "", which the cache never stores.
func Normalize(q string) string {
	var b strings.Builder
	b.Grow(len(q))
	sc := newScanner(q)
	prevHan := true
	for {
		t, ok := sc.next()
		if !ok {
			return b.String()
		}
		han := t.kind == tokHan || t.kind == tokHanStop
		if b.Len() > 0 && !(han && prevHan) {
			b.WriteByte(' ')
		}
		prevHan = han
		if t.raw != nil {
			b.Write(t.raw)
		} else {
			b.Write(t.text)
		}
	}
}
