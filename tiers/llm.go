package tiers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragfuse/ragfuse/retrieval"
)

// Candidate is one model an LLM tier may call.
type Candidate struct {
	// ID names the candidate: the key of its models: entry. Breakers,
	// attempts and answers name the candidate by ID ("model/<ID>").
	ID string
	// Model is the provider's model name sent in requests; empty means ID.
	Model string
	// Client calls the endpoint; NewClient makes one that also reports
	// Retry-After on 429 responses.
	Client *openai.Client
	// MaxTokens caps the completion; 0 leaves it to the provider.
	MaxTokens int
	// Cooldown is how long the candidate is skipped after a 429 without a
	// Retry-After header; 0 means the guard's default.
	Cooldown time.Duration

	capCompletion bool // MaxTokens goes as max_completion_tokens; set by NewLLM
}

// CandidateGuard guards each model candidate call of an LLM tier. The
// pipeline implements it with a breaker per candidate ("model/<ID>"), a
// cooldown after 429 responses and the record of every attempt.
// Implementations must be safe for concurrent use.
type CandidateGuard interface {
	// Acquire asks to call candidate c for tier. When ok is false the
	// candidate must be skipped without a call. Otherwise the call is made
	// with callCtx (ctx, or a context derived from it, e.g. carrying the
	// call's tracing span), and release must be called exactly once, with
	// the call's error (nil on success) and the tokens it spent.
	Acquire(ctx context.Context, tier string, c Candidate) (callCtx context.Context, release func(err error, u Usage), ok bool)
}

// LLMConfig configures an LLM tier. Zero fields take the defaults written
// beside them.
type LLMConfig struct {
	Name       string // default: the Source
	Source     Source // default SourcePrimary
	Candidates []Candidate
	// Retriever supplies the documents of the RAG prompt (shared through
	// Query.Memo when the pipeline sets one); nil sends no documents.
	Retriever retrieval.Retriever
	// ContextDocs is how many documents go into the prompt; default 5.
	ContextDocs int
	// SystemPrompt replaces DefaultSystemPrompt.
	SystemPrompt string
	// HistoryTurns is how many of the latest turns of the question's
	// conversation (Query.History) go into the prompt, within a bound on
	// their size, the oldest dropped first; default DefaultHistoryTurns; a
	// negative value sends none.
	HistoryTurns int
}

// LLM is a tier that asks OpenAI-compatible models, trying its candidates
// in order until one answers. It is safe for concurrent use.
type LLM struct {
	name   string
	source Source
	cands  []Candidate
	ret    retrieval.Retriever
	k      int
	system string
	turns  int // LLMConfig.HistoryTurns
}

var _ Tier = (*LLM)(nil)

var errNoClient = errors.New("candidate has no client")

// NewLLM returns an LLM tier.
func NewLLM(cfg LLMConfig) *LLM {
	l := &LLM{
		name:   cfg.Name,
		source: cfg.Source,
		ret:    cfg.Retriever,
		k:      cfg.ContextDocs,
		system: cfg.SystemPrompt,
		turns:  cfg.HistoryTurns,
	}
	if l.source == "" {
		l.source = SourcePrimary
	}
	if l.name == "" {
		l.name = string(l.source)
	}
	if l.k <= 0 {
		l.k = 5
	}
	if l.system == "" {
		l.system = DefaultSystemPrompt
	}
	for _, c := range cfg.Candidates {
		if c.Model == "" {
			c.Model = c.ID
		}
		c.capCompletion = c.MaxTokens > 0 && refusesMaxTokens(c.Model)
		l.cands = append(l.cands, c)
	}
	return l
}

// Name returns the tier's name.
func (l *LLM) Name() string { return l.name }

// Source returns the tier's source.
func (l *LLM) Source() Source { return l.source }

// Candidates returns a copy of the tier's candidates, in order.
func (l *LLM) Candidates() []Candidate { return append([]Candidate(nil), l.cands...) }

// DocsWanted returns how many documents the tier puts into its prompt, or
// 0 without a Retriever.
func (l *LLM) DocsWanted() int {
	if l.ret == nil {
		return 0
	}
	return l.k
}

// Answer asks the candidates in order, through q.Guard if set. It stops
// at the first answer, at a failure that is the question's fault (context
// length, content filter, bad request: another candidate of the same tier
// would fail alike), or when ctx is done. With no candidate tried it
// returns an *Error of KindUnavailable wrapping ErrUnavailable; otherwise
// the last call's error.
func (l *LLM) Answer(ctx context.Context, q Query) (Answer, error) {
	docs, derr := l.documents(ctx, q)
	if derr != nil {
		return Answer{}, derr
	}
	msgs := buildMessages(l.system, q.Question, historyMessages(q.History, l.turns), docs)
	a, err := l.each(ctx, q.Guard, func(ctx context.Context, c Candidate) (Answer, *Error) { return l.call(ctx, c, msgs) })
	if err != nil {
		return Answer{}, err
	}
	a.Docs = docs
	return a, nil
}

// each calls the candidates in order through g, if not nil (see
// CandidateGuard), until one answers. It stops early at a committed
// (Interrupted) answer, at a failure that is the question's fault (context
// length, content filter, bad request: another candidate of the same tier
// would fail alike), or when ctx is done. With no candidate tried it
// returns an *Error of KindUnavailable wrapping ErrUnavailable; otherwise
// the last call's error.
func (l *LLM) each(ctx context.Context, g CandidateGuard, call func(ctx context.Context, c Candidate) (Answer, *Error)) (Answer, error) {
	var last *Error
	for _, c := range l.cands {
		if err := ctx.Err(); err != nil {
			if last == nil { // no candidate was called: the error names none
				last = classifyCall(l.name, "", err, err, 0)
			}
			return Answer{}, last
		}
		cctx := ctx
		var release func(error, Usage)
		if g != nil {
			var ok bool
			if cctx, release, ok = g.Acquire(ctx, l.name, c); !ok {
				continue
			}
		}
		a, e := callReleased(cctx, l.name, c, call, release)
		if e == nil {
			return a, nil
		}
		if a.Interrupted {
			return a, e
		}
		last = e
		switch e.Kind {
		case KindCanceled, KindContextLength, KindContentFilter, KindBadRequest:
			return Answer{}, e
		}
	}
	if last == nil {
		return Answer{}, &Error{Kind: KindUnavailable, Tier: l.name, Err: ErrUnavailable}
	}
	return Answer{}, last
}

// callReleased calls c and then release, if not nil, exactly once with the
// call's outcome: also when the call panics, in which case the panic goes
// on after the release.
func callReleased(ctx context.Context, tier string, c Candidate, call func(context.Context, Candidate) (Answer, *Error),
	release func(error, Usage)) (a Answer, e *Error) {
	if release == nil {
		return call(ctx, c)
	}
	done := false
	defer func() {
		if done {
			return
		}
		v := recover() // nil: runtime.Goexit, which goes on by itself
		release(&Error{Kind: KindOther, Tier: tier, Model: c.ID, Err: fmt.Errorf("candidate call panicked: %v", v)}, Usage{})
		if v != nil {
			panic(v)
		}
	}()
	a, e = call(ctx, c)
	done = true
	if e != nil {
		release(e, e.Usage)
	} else {
		release(nil, a.Usage)
	}
	return a, e
}

// documents returns the prompt's documents; a failed retrieval leaves the
// prompt without documents, and the model says it cannot answer. When ctx
// ends while the retrieval is under way, no model can be called in time:
// it returns an *Error of KindRetrieving (KindCanceled if the caller went
// away), which names no model, so that no model is blamed.
func (l *LLM) documents(ctx context.Context, q Query) ([]retrieval.Doc, *Error) {
	if l.ret == nil {
		return nil, nil
	}
	docs, err := q.Memo.Docs(ctx, l.ret, q, l.k)
	if err != nil {
		if ce := ctx.Err(); ce != nil {
			kind := KindRetrieving
			if errors.Is(ce, context.Canceled) {
				kind = KindCanceled
			}
			return nil, &Error{Kind: kind, Tier: l.name, Err: err}
		}
		return nil, nil
	}
	return docs[:min(len(docs), l.k)], nil // without a Memo, the retriever's word
}

// call makes one chat completion call to c.
func (l *LLM) call(ctx context.Context, c Candidate, msgs []openai.ChatCompletionMessage) (Answer, *Error) {
	if c.Client == nil {
		return Answer{}, &Error{Kind: KindOther, Tier: l.name, Model: c.ID, Err: errNoClient}
	}
	cctx, note := withNote(ctx)
	res, err := c.Client.CreateChatCompletion(cctx, chatRequest(c, msgs))
	if err != nil {
		return Answer{}, estimateSpent(classifyCall(l.name, c.ID, err, ctx.Err(), note.retryAfter), msgs)
	}
	u := Usage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens}
	if len(res.Choices) == 0 {
		return Answer{}, &Error{Kind: KindEmpty, Tier: l.name, Model: c.ID, Usage: u, Err: errNoChoices}
	}
	ch := res.Choices[0]
	text := strings.TrimSpace(ch.Message.Content)
	if ch.FinishReason == openai.FinishReasonContentFilter {
		return Answer{}, &Error{Kind: KindContentFilter, Tier: l.name, Model: c.ID, Usage: u, Err: errFiltered}
	}
	if text == "" {
		return Answer{}, &Error{Kind: KindEmpty, Tier: l.name, Model: c.ID, Usage: u, Err: errNoContent}
	}
	return Answer{Text: text, Source: l.source, Model: c.ID, Usage: u}, nil
}

// chatRequest returns the chat completion request for c. The cap goes as
// max_tokens, which every OpenAI-compatible endpoint knows, except to the
// models go-openai refuses it for (o1, o3, o4, gpt-5…): to those it goes
// as max_completion_tokens.
func chatRequest(c Candidate, msgs []openai.ChatCompletionMessage) openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{Model: c.Model, Messages: msgs}
	if c.capCompletion {
		req.MaxCompletionTokens = c.MaxTokens
	} else {
		req.MaxTokens = c.MaxTokens
	}
	return req
}

// refusesMaxTokens reports whether go-openai refuses max_tokens for model,
// asked once per candidate rather than on every call.
func refusesMaxTokens(model string) bool {
	req := openai.ChatCompletionRequest{Model: model, MaxTokens: 1}
	return errors.Is(openai.NewReasoningValidator().Validate(req), openai.ErrReasoningModelMaxTokensDeprecated)
}

var (
	errNoChoices = errors.New("response has no choices")
	errNoContent = errors.New("response has no content")
	errFiltered  = errors.New("response withheld by the content filter")
)
