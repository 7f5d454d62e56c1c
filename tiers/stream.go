package tiers

import (
	"context"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Delta is a piece of a streamed answer, handed to StreamRequest.Emit.
type Delta struct {
	Model string // the candidate writing the answer (its ID)
	Text  string
}

// StreamRequest says how a StreamTier streams one answer. Zero fields take
// the defaults written beside them. A StreamRequest is a plain value.
type StreamRequest struct {
	// Emit receives the answer's text once the stream is committed, in
	// order, from one goroutine. An error from Emit (the caller went away)
	// stops the stream at once; the call then ends with an *Error of
	// KindCanceled wrapping it. Nil drops the text.
	Emit func(Delta) error
	// FirstTokenTimeout bounds the wait from the call to the first text of
	// the answer; 0 leaves it to ctx.
	FirstTokenTimeout time.Duration
	// StallTimeout bounds the wait for each chunk after the first text;
	// 0 leaves it to ctx.
	StallTimeout time.Duration
	// CommitAfter is how many characters (runes) of text are held back
	// before the stream is committed and the text goes to Emit; 0 commits
	// at the first text (unless CommitAfterDuration is set). A stream that ends well before that many commits
	// at its end. Before commit, a failure moves on to the next candidate
	// and Emit never sees the failed candidate's text.
	CommitAfter int
	// CommitAfterDuration is how long after the first text the text is
	// held back before the stream is committed; 0 holds nothing back by
	// time. When the time is up the held text goes to Emit at once, even
	// if no further chunk has come; a stream that ends sooner commits at
	// its end. With CommitAfter also set, the stream commits at whichever
	// comes first; with CommitAfter 0, only the time (or the end) commits.
	// A held stream reads its chunks on a goroutine of its own, which ends
	// with the call.
	CommitAfterDuration time.Duration
	// Continue, if not empty, is an answer another model began and could
	// not finish: the call asks the model to continue it where it stopped,
	// and streams only the continuation.
	Continue string
	// ContinuePrompt is the instruction sent with Continue; "{partial}" in
	// it is replaced by the partial answer, which is otherwise appended.
	// Empty means DefaultContinuePrompt in the question's language.
	ContinuePrompt string
}

// StreamTier is a Tier that can stream its answer. Implementations must be
// safe for concurrent use.
type StreamTier interface {
	Tier
	// AnswerStream answers q like Answer, sending the text to r.Emit as it
	// arrives. Before the stream is committed a failure is invisible (the
	// result is an error, as from Answer). After commit, a failure returns
	// the partial Answer with Interrupted set, together with the error
	// that ended it.
	AnswerStream(ctx context.Context, q Query, r StreamRequest) (Answer, error)
}

var _ StreamTier = (*LLM)(nil)

// DefaultContinuePrompt holds, by language, the instruction that asks a
// model to continue an answer another model began. "{partial}" stands for
// the partial answer.
var DefaultContinuePrompt = map[string]string{
	"en": "An answer to this question was cut off. The user has already received this beginning of the answer:\n\n" +
		"<<<\n{partial}\n>>>\n\n" +
		"Continue the answer exactly where it stopped, in the same language and style. " +
		"Do not repeat any of it, do not start over, and do not mention the interruption.",
	"zh": "这个问题的回答在中途被截断了。用户已经收到了回答的开头部分：\n\n" +
		"<<<\n{partial}\n>>>\n\n" +
		"请从截断处接着写完回答，保持相同的语言和风格。不要重复已有内容，不要从头开始，也不要提及中断。",
}

// continueMessages returns the RAG prompt msgs with the continuation
// instruction for partial added to its user message. No assistant prefill
// is used, so any chat model can continue.
func continueMessages(msgs []openai.ChatCompletionMessage, question, partial, prompt string) []openai.ChatCompletionMessage {
	if prompt == "" {
		prompt = DefaultContinuePrompt[DetectLanguage(question)]
	}
	if strings.Contains(prompt, "{partial}") {
		prompt = strings.ReplaceAll(prompt, "{partial}", partial)
	} else {
		prompt = strings.TrimRight(prompt, "\n") + "\n\n" + partial
	}
	out := append([]openai.ChatCompletionMessage(nil), msgs...)
	last := &out[len(out)-1]
	last.Content += "\n\n" + prompt
	return out
}

// AnswerStream streams the answer of the first candidate that commits,
// trying the candidates in order under the same guard as Answer (q.Guard,
// see CandidateGuard): an open or cooling candidate is skipped, and each call's
// outcome is released when its stream ends. A failure before commit moves
// on to the next candidate; a failure after commit returns the partial
// answer (Interrupted) and an *Error of KindInterrupted wrapping the cause,
// of KindContentFilter when the model stopped for its content filter, or
// of KindCanceled when the caller went away or Emit failed. Once the model
// has sent its finish reason, losing the usage chunk or [DONE] is no
// failure: the answer is whole, its usage counted from the chunks.
func (l *LLM) AnswerStream(ctx context.Context, q Query, r StreamRequest) (Answer, error) {
	docs, derr := l.documents(ctx, q)
	if derr != nil {
		return Answer{}, derr
	}
	msgs := buildMessages(l.system, q.Question, historyMessages(q.History, l.turns), docs)
	if r.Continue != "" {
		msgs = continueMessages(msgs, q.Question, r.Continue, r.ContinuePrompt)
	}
	a, err := l.each(ctx, q.Guard, func(ctx context.Context, c Candidate) (Answer, *Error) {
		a, e := l.callStream(ctx, c, msgs, r)
		if e != nil {
			estimateSpent(e, msgs)
			if a.Interrupted {
				a.Usage = e.Usage
			}
		}
		return a, e
	})
	if err == nil || a.Interrupted {
		a.Docs = docs
	}
	return a, err
}
