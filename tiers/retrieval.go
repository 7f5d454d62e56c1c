package tiers

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/ragfuse/ragfuse/retrieval"
)

// DefaultIntro holds the first line of a retrieval answer, by language.
var DefaultIntro = map[string]string{
	"en": "Here is what our knowledge base says about your question:",
	"zh": "以下是知识库中与您的问题最相关的内容：",
}

// snippetRunes caps the passage shown for each document.
const snippetRunes = 280

// RetrievalConfig configures a retrieval tier. Zero fields take the
// defaults written beside them.
type RetrievalConfig struct {
	Name      string // default "retrieval"
	Retriever retrieval.Retriever
	TopK      int               // documents shown; default 3
	Intro     map[string]string // first line by language ("zh", "en"); missing ones from DefaultIntro
}

// Retrieval is a tier that answers with the most relevant knowledge-base
// documents and no model. It is safe for concurrent use.
type Retrieval struct {
	name  string
	ret   retrieval.Retriever
	k     int
	intro map[string]string
}

var _ Tier = (*Retrieval)(nil)

var (
	errNoRetriever = errors.New("no retriever configured")
	errNoDocs      = errors.New("no relevant documents")
)

// NewRetrieval returns a retrieval tier.
func NewRetrieval(cfg RetrievalConfig) *Retrieval {
	r := &Retrieval{name: cfg.Name, ret: cfg.Retriever, k: cfg.TopK, intro: map[string]string{}}
	if r.name == "" {
		r.name = string(SourceRetrieval)
	}
	if r.k <= 0 {
		r.k = 3
	}
	for lang, s := range DefaultIntro {
		r.intro[lang] = s
	}
	for lang, s := range cfg.Intro {
		if s != "" {
			r.intro[lang] = s
		}
	}
	return r
}

// Name returns the tier's name.
func (r *Retrieval) Name() string { return r.name }

// Source returns SourceRetrieval.
func (r *Retrieval) Source() Source { return SourceRetrieval }

// DocsWanted returns how many documents the tier shows.
func (r *Retrieval) DocsWanted() int { return r.k }

// passage returns the passage of d that answers question best (see
// retrieval.BestPassage) on one line, at most snippetRunes long, with
// "…" where it starts inside the text.
func passage(question string, d retrieval.Doc) string {
	p := retrieval.BestPassage(question, d, snippetRunes-1)
	s := oneLine(p.Text)
	if p.Start > 0 && s != "" {
		s = "…" + s
	}
	return s
}

// Answer formats the top documents for q, each with its title, the
// passage that answers q best and its URL. It fails with KindNoDocs when
// nothing relevant is found.
func (r *Retrieval) Answer(ctx context.Context, q Query) (Answer, error) {
	if r.ret == nil {
		return Answer{}, &Error{Kind: KindOther, Tier: r.name, Err: errNoRetriever}
	}
	docs, err := q.Memo.documents(ctx, r.ret, q, r.k, false)
	if err != nil {
		var te *Error
		if errors.As(err, &te) {
			return Answer{}, err
		}
		kind := KindOther
		if ce := ctx.Err(); ce != nil {
			kind = KindOf(ce)
		}
		return Answer{}, &Error{Kind: kind, Tier: r.name, Err: err}
	}
	if len(docs) == 0 {
		return Answer{}, &Error{Kind: KindNoDocs, Tier: r.name, Err: errNoDocs}
	}
	lang := DetectLanguage(q.Question)
	intro := r.intro[lang]
	if intro == "" {
		intro = r.intro["en"]
	}
	var b strings.Builder
	b.WriteString(intro)
	for i, d := range docs {
		b.WriteString("\n\n" + strconv.Itoa(i+1) + ". " + oneLine(d.Title))
		if s := passage(q.Question, d); s != "" {
			b.WriteString("\n" + s)
		}
		if d.URL != "" {
			b.WriteString("\n" + d.URL)
		}
	}
	return Answer{Text: b.String(), Source: SourceRetrieval, Docs: docs}, nil
}
