package tiers

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// The causes a stream's watchdog cancels it with.
var (
	errFirstToken = errors.New("no text before the first-token timeout")
	errStall      = errors.New("stream stalled past the stall timeout")
	errNoFinish   = errors.New("stream ended without a finish reason")
)

// watchdog cancels a stream that sends no text before its first-token
// timeout, or no chunk within its stall timeout once text has come. It
// runs on a timer: no goroutine of its own.
type watchdog struct {
	t      *time.Timer
	armed  bool // t is the stall timer
	stall  time.Duration
	cancel context.CancelCauseFunc
}

func startWatchdog(cancel context.CancelCauseFunc, first, stall time.Duration) *watchdog {
	w := &watchdog{stall: stall, cancel: cancel}
	if first > 0 {
		w.t = time.AfterFunc(first, func() { cancel(errFirstToken) })
	}
	return w
}

// text is called on each chunk once text has come: the stall timer starts
// over. A timer that fired meanwhile cancels nothing new: the stream is
// cancelled already.
func (w *watchdog) text() {
	switch {
	case w.stall <= 0:
		w.stop()
		w.t = nil
	case w.armed:
		w.t.Reset(w.stall)
	default:
		w.stop()
		w.t = time.AfterFunc(w.stall, func() { w.cancel(errStall) })
		w.armed = true
	}
}

// pause stops the stall timer while the receiver takes text, and resume
// starts it over: time spent in Emit is no gap of the stream.
func (w *watchdog) pause() {
	if w.armed {
		w.t.Stop()
	}
}

func (w *watchdog) resume() {
	if w.armed {
		w.t.Reset(w.stall)
	}
}

func (w *watchdog) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// streamState is one candidate's stream as it goes.
type streamState struct {
	r         StreamRequest
	model     string
	dog       *watchdog       // nil: none
	text      strings.Builder // all text received
	sent      int             // bytes of text already handed to Emit
	committed bool
	due       bool  // CommitAfterDuration has passed since the first text
	chunks    int   // chunks with text
	usage     Usage // as reported by the stream's usage chunk
	hasUsage  bool
	finish    openai.FinishReason
}

// add takes a piece of text and hands what may be sent to Emit.
func (s *streamState) add(t string) error {
	s.text.WriteString(t)
	if !s.committed && !s.ready() {
		return nil
	}
	return s.flush()
}

// ready reports whether the text held so far may be committed: once
// CommitAfterDuration has passed, or CommitAfter characters have come
// (the first text when neither is set). White space alone commits nothing.
func (s *streamState) ready() bool {
	all := s.text.String()
	switch {
	case strings.TrimSpace(all) == "":
		return false
	case s.due:
		return true
	case s.r.CommitAfter <= 0 && s.r.CommitAfterDuration > 0:
		return false // only the time commits
	}
	return utf8.RuneCountInString(all) >= max(s.r.CommitAfter, 1)
}

// flush commits the stream and hands the text not yet sent to Emit.
func (s *streamState) flush() error {
	s.committed = true
	all := s.text.String()
	if s.sent == len(all) {
		return nil
	}
	piece := all[s.sent:]
	s.sent = len(all)
	if s.r.Emit == nil {
		return nil
	}
	if s.dog != nil {
		s.dog.pause()
		defer s.dog.resume()
	}
	if err := s.r.Emit(Delta{Model: s.model, Text: piece}); err != nil {
		return &emitError{err}
	}
	return nil
}

// emitError is an error of StreamRequest.Emit: the caller went away.
type emitError struct{ err error }

func (e *emitError) Error() string { return "stream receiver: " + e.err.Error() }
func (e *emitError) Unwrap() error { return e.err }

// spent returns the tokens the call spent: the stream's own usage report,
// else one completion token per text chunk received.
func (s *streamState) spent() Usage {
	if s.hasUsage {
		return s.usage
	}
	return Usage{CompletionTokens: s.chunks}
}

// callStream streams one answer from c. A failure after commit returns the
// partial answer with Interrupted set.
func (l *LLM) callStream(ctx context.Context, c Candidate, msgs []openai.ChatCompletionMessage, r StreamRequest) (Answer, *Error) {
	if c.Client == nil {
		return Answer{}, &Error{Kind: KindOther, Tier: l.name, Model: c.ID, Err: errNoClient}
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	dog := startWatchdog(cancel, r.FirstTokenTimeout, r.StallTimeout)
	defer dog.stop()
	nctx, note := withNote(sctx)
	req := chatRequest(c, msgs)
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := c.Client.CreateChatCompletionStream(nctx, req)
	if err != nil {
		return Answer{}, l.streamError(ctx, sctx, c, err, note.retryAfter)
	}
	defer stream.Close() // closes the connection at once, also when the caller went away
	s := &streamState{r: r, model: c.ID, dog: dog}
	recv := stream.Recv
	var rd *heldReader
	if r.CommitAfterDuration > 0 {
		rd = startHeldReader(stream, s)
		defer rd.stop()
		recv = rd.next
	}
	for {
		resp, err := recv()
		if errors.Is(err, io.EOF) && (s.finish != "" || s.text.Len() == 0) {
			break
		}
		if err != nil && s.finish != "" && ctx.Err() == nil && !isEmitError(err) {
			// The model had finished its answer: only the usage chunk or
			// [DONE] was lost (a broken connection, a stall). The answer
			// is whole; its usage is then counted from the chunks.
			break
		}
		if err == nil && s.text.Len() > 0 {
			dog.text()
		}
		if err == nil {
			err = s.take(resp, dog)
		}
		if err != nil {
			return l.streamFailed(ctx, sctx, c, s, err)
		}
		if rd != nil && s.text.Len() > 0 {
			rd.hold(r.CommitAfterDuration)
		}
	}
	if s.finish == openai.FinishReasonContentFilter {
		return l.streamFailed(ctx, sctx, c, s, errFiltered)
	}
	if strings.TrimSpace(s.text.String()) == "" {
		return Answer{}, &Error{Kind: KindEmpty, Tier: l.name, Model: c.ID, Usage: s.spent(), Err: errNoContent}
	}
	if err := s.flush(); err != nil {
		return l.streamFailed(ctx, sctx, c, s, err)
	}
	return Answer{Text: s.text.String(), Source: l.source, Model: c.ID, Usage: s.spent()}, nil
}

// take reads one chunk of the stream.
func (s *streamState) take(resp openai.ChatCompletionStreamResponse, dog *watchdog) error {
	if resp.Usage != nil {
		s.usage = Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
		s.hasUsage = true
	}
	if len(resp.Choices) == 0 {
		return nil
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "" {
		s.finish = ch.FinishReason
	}
	if ch.Delta.Content == "" {
		return nil
	}
	if s.text.Len() == 0 {
		dog.text() // the first text: the first-token timer gives way to the stall timer
	}
	s.chunks++
	return s.add(ch.Delta.Content)
}

// streamFailed turns a failure of a stream into the call's result: an
// error before commit; the partial, Interrupted answer after.
func (l *LLM) streamFailed(ctx, sctx context.Context, c Candidate, s *streamState, err error) (Answer, *Error) {
	var e *Error
	switch {
	case isEmitError(err):
		e = &Error{Kind: KindCanceled, Tier: l.name, Model: c.ID, Err: err}
	case errors.Is(err, errFiltered):
		e = &Error{Kind: KindContentFilter, Tier: l.name, Model: c.ID, Err: err}
	case errors.Is(err, io.EOF):
		e = &Error{Kind: KindConnection, Tier: l.name, Model: c.ID, Err: errNoFinish}
	case errors.Is(err, openai.ErrTooManyEmptyStreamMessages) && ctx.Err() == nil && sctx.Err() == nil:
		e = &Error{Kind: KindMalformed, Tier: l.name, Model: c.ID, Err: err}
	default:
		e = l.streamError(ctx, sctx, c, err, 0)
	}
	e.Usage = s.spent()
	if !s.committed {
		return Answer{}, e
	}
	a := Answer{Text: s.text.String()[:s.sent], Source: l.source, Model: c.ID, Usage: e.Usage, Interrupted: true}
	if e.Kind == KindCanceled || e.Kind == KindContentFilter {
		return a, e
	}
	return a, &Error{Kind: KindInterrupted, Tier: l.name, Model: c.ID, Usage: e.Usage, Err: e}
}

// streamError classifies the error of a stream call: a watchdog's cause
// is a timeout of the call; otherwise as for a plain call (classifyCall).
func (l *LLM) streamError(ctx, sctx context.Context, c Candidate, err error, retryAfter time.Duration) *Error {
	if ctx.Err() == nil {
		if cause := context.Cause(sctx); errors.Is(cause, errFirstToken) || errors.Is(cause, errStall) {
			return &Error{Kind: KindTimeout, Tier: l.name, Model: c.ID, Err: cause}
		}
	}
	return classifyCall(l.name, c.ID, err, ctx.Err(), retryAfter)
}

// isEmitError reports whether err is the receiver's, from Emit.
func isEmitError(err error) bool {
	var ee *emitError
	return errors.As(err, &ee)
}
