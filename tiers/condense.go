package tiers

import (
	"context"
	"errors"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// CondenseTier names the condense calls in attempts and errors.
const CondenseTier = "condense"

// DefaultCondensePrompt is the system prompt of a Condenser.
const DefaultCondensePrompt = `Rewrite the user's last question as one standalone question that can be understood without the conversation before it, keeping its meaning and its language.
Reply with the rewritten question only, on one line, without answering it.`

// Defaults of CondenserConfig.
const (
	DefaultCondenseTimeout = time.Second
	condenseMaxTokens      = 200
	maxCondensedRunes      = 500 // a longer rewrite is cut
)

// CondenserConfig configures a Condenser. Zero fields take the defaults
// written beside them.
type CondenserConfig struct {
	// Model is the chat model that rewrites; its Client is required. Its
	// MaxTokens, if lower than 200, caps the rewrite.
	Model Candidate
	// Timeout bounds one rewrite; default DefaultCondenseTimeout.
	Timeout time.Duration
	// Prompt replaces DefaultCondensePrompt.
	Prompt string
}

// Condenser rewrites a follow-up question and the conversation before it
// into one standalone question ("how long do I have to return the
// jacket?" for "and how long for that?"), so that retrieval finds what
// the follow-up is about. It is safe for concurrent use.
type Condenser struct {
	model   Candidate
	timeout time.Duration
	prompt  string
}

var errNoRewrite = errors.New("the rewrite is empty")

// NewCondenser returns a Condenser.
func NewCondenser(cfg CondenserConfig) *Condenser {
	c := &Condenser{model: cfg.Model, timeout: cfg.Timeout, prompt: cfg.Prompt}
	if c.model.Model == "" {
		c.model.Model = c.model.ID
	}
	c.model.MaxTokens = min(c.model.MaxTokens, condenseMaxTokens)
	if c.model.MaxTokens <= 0 {
		c.model.MaxTokens = condenseMaxTokens
	}
	c.model.capCompletion = refusesMaxTokens(c.model.Model)
	if c.timeout <= 0 {
		c.timeout = DefaultCondenseTimeout
	}
	if c.prompt == "" {
		c.prompt = DefaultCondensePrompt
	}
	return c
}

// Model returns the condensing model's candidate (its ID names its
// breaker "model/<ID>").
func (c *Condenser) Model() Candidate { return c.model }

// Condense returns q's question rewritten, with the help of q.History, as
// a standalone question. The call goes through g when it is not nil
// (Acquire with tier CondenseTier): a call g refuses fails at once with
// an *Error of KindUnavailable. It is bounded by the Timeout and ctx, and
// fails with an *Error of the kinds of a chat call, or KindEmpty for a
// rewrite without text. The rewrite is the first line of the model's
// reply, cut to 500 characters.
func (c *Condenser) Condense(ctx context.Context, g CandidateGuard, q Query) (string, error) {
	if c.model.Client == nil {
		return "", &Error{Kind: KindOther, Tier: CondenseTier, Model: c.model.ID, Err: errNoClient}
	}
	release := func(error, Usage) {}
	if g != nil {
		var ok bool
		if ctx, release, ok = g.Acquire(ctx, CondenseTier, c.model); !ok {
			return "", &Error{Kind: KindUnavailable, Tier: CondenseTier, Model: c.model.ID, Err: ErrUnavailable}
		}
	}
	s, u, err := c.call(ctx, q)
	if err != nil {
		release(err, err.Usage)
		return "", err
	}
	release(nil, u)
	return s, nil
}

// call makes the rewrite's chat call.
func (c *Condenser) call(ctx context.Context, q Query) (string, Usage, *Error) {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	nctx, note := withNote(cctx)
	res, err := c.model.Client.CreateChatCompletion(nctx, chatRequest(c.model, c.messages(q)))
	if err != nil {
		return "", Usage{}, classifyCall(CondenseTier, c.model.ID, err, cctx.Err(), note.retryAfter)
	}
	u := Usage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens}
	if len(res.Choices) == 0 {
		return "", u, &Error{Kind: KindEmpty, Tier: CondenseTier, Model: c.model.ID, Usage: u, Err: errNoChoices}
	}
	text := strings.TrimSpace(res.Choices[0].Message.Content)
	text, _, _ = strings.Cut(text, "\n")
	text = strings.Trim(strings.TrimSpace(text), "\"'“”「」")
	if text == "" {
		return "", u, &Error{Kind: KindEmpty, Tier: CondenseTier, Model: c.model.ID, Usage: u, Err: errNoRewrite}
	}
	return clip(text, maxCondensedRunes), u, nil
}

// messages returns the rewrite's prompt: the system prompt, then one user
// message with the latest turns of the conversation and the question.
func (c *Condenser) messages(q Query) []openai.ChatCompletionMessage {
	var b strings.Builder
	b.WriteString("Conversation:\n")
	for _, m := range historyMessages(q.History, DefaultHistoryTurns) {
		if m.Role == openai.ChatMessageRoleAssistant {
			b.WriteString("Assistant: ")
		} else {
			b.WriteString("User: ")
		}
		writeOneLine(&b, m.Content)
		b.WriteByte('\n')
	}
	b.WriteString("\nLast question: ")
	writeOneLine(&b, q.Question)
	return []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: c.prompt},
		{Role: openai.ChatMessageRoleUser, Content: b.String()},
	}
}
