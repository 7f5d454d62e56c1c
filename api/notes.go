package api

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/ragfuse/ragfuse/tiers"
)

// Actions tell a frontend which buttons to offer with an answer.
type Actions struct {
	Refresh         bool `json:"refresh"`          // ask again: a better tier may answer now
	RetryLater      bool `json:"retry_later"`      // answering is down; suggest trying later
	CustomerService bool `json:"customer_service"` // offer a human agent
}

// Note is the note and actions shown with an answer from one source.
type Note struct {
	Text    string
	Actions Actions
}

// defaultNotes are the built-in notes by language and source. Sources
// without an entry (primary, cache) get no note and no actions.
var defaultNotes = map[string]map[tiers.Source]Note{
	"zh": {
		tiers.SourceFallback:   {"当前使用备用服务，回答质量可能略有下降。", Actions{Refresh: true}},
		tiers.SourceStaleCache: {"AI助手暂时不可用，以下是之前的回答，内容可能不是最新的。", Actions{Refresh: true}},
		tiers.SourceRetrieval:  {"AI助手暂时不可用，以下是知识库中最相关的文章。", Actions{RetryLater: true}},
		tiers.SourceStatic:     {"AI助手暂时无法回答，您可以联系人工客服。", Actions{CustomerService: true}},
	},
	"en": {
		tiers.SourceFallback:   {"Answered by the backup model; quality may be slightly lower.", Actions{Refresh: true}},
		tiers.SourceStaleCache: {"Automatic answers are temporarily unavailable; this is an earlier answer and may be out of date.", Actions{Refresh: true}},
		tiers.SourceRetrieval:  {"Automatic answers are temporarily unavailable; here are the most relevant knowledge-base articles.", Actions{RetryLater: true}},
		tiers.SourceStatic:     {"We cannot answer automatically right now; you can contact customer service.", Actions{CustomerService: true}},
	},
}

// interruptedNote is added to an answer whose stream broke.
var interruptedNote = map[string]string{
	"zh": "回答生成中断，内容可能不完整。",
	"en": "The answer was interrupted and may be incomplete.",
}

var knownSources = []tiers.Source{tiers.SourceCache, tiers.SourcePrimary, tiers.SourceFallback,
	tiers.SourceStaleCache, tiers.SourceRetrieval, tiers.SourceStatic}

// notebook picks the note for a source in a language. It is immutable and
// safe for concurrent use.
type notebook struct {
	def   string                           // the default language
	notes map[string]map[tiers.Source]Note // by language, then source
}

// Notes overrides the built-in notes and actions, by language ("zh",
// "en", or a new one) and then by source name ("fallback", "static"…).
type Notes map[string]map[string]NoteOverride

// NoteOverride replaces the note of one source in one language: a
// non-empty Text replaces the text, a non-nil action its value.
type NoteOverride struct {
	Text            string
	Refresh         *bool
	RetryLater      *bool
	CustomerService *bool
}

// newNotebook merges the overrides of cfg into the built-in notes. A
// language that is not built in takes the default language's notes for
// the sources it does not override.
func newNotebook(defLang string, cfg Notes) (*notebook, error) {
	if defLang == "" {
		defLang = "zh"
	}
	defLang = strings.ToLower(defLang)
	nb := &notebook{def: defLang, notes: map[string]map[tiers.Source]Note{}}
	for lang, m := range defaultNotes {
		nb.notes[lang] = cloneNotes(m)
	}
	langs := make([]string, 0, len(cfg))
	for lang := range cfg {
		langs = append(langs, lang)
	}
	sort.Strings(langs)
	for _, lang := range langs {
		l := strings.ToLower(lang)
		if l == "" || strings.ContainsAny(l, " ,;=") {
			return nil, fmt.Errorf("notes.%s: not a language tag", lang)
		}
		if nb.notes[l] == nil {
			nb.notes[l] = map[tiers.Source]Note{}
		}
		for src, nc := range cfg[lang] {
			s := tiers.Source(src)
			if !knownSource(s) {
				return nil, fmt.Errorf("notes.%s.%s: unknown source (want one of %s)", lang, src, sourceList())
			}
			n, ok := nb.notes[l][s]
			if !ok {
				n = defaultNotes[defLang][s]
			}
			if nc.Text != "" {
				n.Text = nc.Text
			}
			setIf(&n.Actions.Refresh, nc.Refresh)
			setIf(&n.Actions.RetryLater, nc.RetryLater)
			setIf(&n.Actions.CustomerService, nc.CustomerService)
			nb.notes[l][s] = n
		}
	}
	if nb.notes[defLang] == nil {
		return nil, fmt.Errorf("server.default_language: %q has no notes (built in: zh, en; add it under notes:)", defLang)
	}
	return nb, nil
}

func cloneNotes(m map[tiers.Source]Note) map[tiers.Source]Note {
	out := make(map[tiers.Source]Note, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func setIf(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

func knownSource(s tiers.Source) bool {
	for _, k := range knownSources {
		if k == s {
			return true
		}
	}
	return false
}

func sourceList() string {
	ss := make([]string, len(knownSources))
	for i, s := range knownSources {
		ss[i] = string(s)
	}
	return strings.Join(ss, ", ")
}

// note returns the note for source in lang; a language without an entry
// for source falls back to the default language.
func (nb *notebook) note(lang string, source tiers.Source) Note {
	if n, ok := nb.notes[lang][source]; ok {
		return n
	}
	return nb.notes[nb.def][source]
}

// interrupted returns the note added to an interrupted answer.
func (nb *notebook) interrupted(lang string) string {
	if s, ok := interruptedNote[lang]; ok {
		return s
	}
	if s, ok := interruptedNote[nb.def]; ok {
		return s
	}
	return interruptedNote["en"]
}

// language picks the language of a request's notes: the supported
// language of its Accept-Language header with the highest q (its primary
// subtag: "zh-CN" counts as "zh"), else the language of the question's
// own script (see questionLanguage) when notes exist in it, else the
// default. Malformed parts of the header, a q that is not a number in
// [0, 1] among them, are ignored.
func (nb *notebook) language(header, question string) string {
	if l := nb.headerLanguage(header); l != "" {
		return l
	}
	if l := questionLanguage(question); nb.notes[l] != nil {
		return l
	}
	return nb.def
}

// questionLanguage returns the language of a question by its script: "zh"
// when it holds a Han character, "en" when it holds another letter, ""
// when it holds no letter.
func questionLanguage(q string) string {
	letter := false
	for _, r := range q {
		if unicode.Is(unicode.Han, r) {
			return "zh"
		}
		letter = letter || unicode.IsLetter(r)
	}
	if letter {
		return "en"
	}
	return ""
}

// headerLanguage returns the supported language of an Accept-Language
// header with the highest q, "" for none.
func (nb *notebook) headerLanguage(header string) string {
	best, bestQ := "", 0.0
	for part := range strings.SplitSeq(header, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		tag = strings.ToLower(strings.TrimSpace(tag))
		q, ok := qValue(params)
		if !ok || q <= bestQ || tag == "" {
			continue
		}
		if _, ok := nb.notes[tag]; ok {
			best, bestQ = tag, q
			continue
		}
		primary, _, _ := strings.Cut(tag, "-")
		if _, ok := nb.notes[primary]; ok {
			best, bestQ = primary, q
		}
	}
	return best
}

// qValue returns the weight in the parameters of one Accept-Language
// entry: 1 without a q parameter (its name in any case, as RFC 9110
// says), and ok false when q is not a number in [0, 1] (NaN included).
func qValue(params string) (q float64, ok bool) {
	for p := range strings.SplitSeq(params, ";") {
		name, value, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || !(v >= 0 && v <= 1) {
			return 0, false
		}
		return v, true
	}
	return 1, true
}
