package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

// StreamEventKind says what a StreamEvent carries.
type StreamEventKind uint8

// The stream event kinds, in the order a stream sends them: one meta
// before the first delta of each tier that writes part of the answer, the
// deltas, a note when the answer was interrupted, and done last.
const (
	StreamMeta  StreamEventKind = iota + 1 // a tier committed to answer: Source, Tier, Model, Continued
	StreamDelta                            // a piece of the answer: Text
	StreamNote                             // a note for the user: Text (the answer was interrupted)
	StreamDone                             // the end: Result
)

// String returns the kind's name: "meta", "delta", "note" or "done".
func (k StreamEventKind) String() string {
	switch k {
	case StreamMeta:
		return "meta"
	case StreamDelta:
		return "delta"
	case StreamNote:
		return "note"
	case StreamDone:
		return "done"
	}
	return "unknown"
}

// StreamEvent is one event of a streamed answer. It is a plain value.
type StreamEvent struct {
	Kind   StreamEventKind
	Source tiers.Source // meta
	Tier   string       // meta: the tier's name
	Model  string       // meta: the model writing the answer, "" for tiers without one
	// Continued is set on the meta of a tier that continues an answer an
	// earlier model tier began (on_stream_break: continue).
	Continued bool
	Text      string  // delta, note
	Result    *Result // done; must not be modified
}

// StreamConfig configures how a model tier streams (Pipeline.Stream).
// Zero fields take the defaults written beside them.
type StreamConfig struct {
	// FirstTokenTimeout bounds the wait for a candidate's first text; 0
	// leaves it to the tier's time limit.
	FirstTokenTimeout time.Duration
	// StallTimeout bounds the wait for each chunk after the first text; 0
	// leaves it to the tier's time limit.
	StallTimeout time.Duration
	// CommitAfter is how many characters are held back before the stream
	// is committed (see tiers.StreamRequest.CommitAfter); 0 commits at the
	// first text, or, with CommitAfterDuration set, leaves it to the time.
	CommitAfter int
	// CommitAfterDuration is how long after the first text the text is
	// held back before the stream is committed (see
	// tiers.StreamRequest.CommitAfterDuration); 0 holds nothing back by
	// time. With CommitAfter also set, the stream commits at whichever
	// comes first.
	CommitAfterDuration time.Duration
	// ContinueOnBreak says how a stream that breaks or stalls after commit
	// ends: false sends the partial answer with an interruption note; true
	// lets the next model tier continue the answer, falling back to the
	// note when none can.
	ContinueOnBreak bool
	// ContinuePrompt is the instruction sent to the model tier that
	// continues this tier's answer (see tiers.StreamRequest.ContinuePrompt);
	// empty means tiers.DefaultContinuePrompt.
	ContinuePrompt string
}

// interruptedNote holds, by language, the note that ends an interrupted
// answer. The question's language picks it (tiers.DetectLanguage).
var interruptedNote = map[string]string{
	"zh": "回答生成中断，内容可能不完整。",
	"en": "The answer was interrupted and may be incomplete.",
}

// Stream runs q through the tiers like Ask and streams the answer to fn.
// Model tiers (tiers.StreamTier) stream their text as it comes; other
// tiers (cache, retrieval, static) send their answer as one delta. Before
// a stream is committed, any failure or timeout moves on to the next
// candidate or tier and fn sees nothing of it. A stream that breaks or
// stalls after commit ends as its tier's StreamConfig.ContinueOnBreak says.
//
// fn is called on the caller's goroutine, in order: meta, deltas, maybe a
// note, then done with the Result, which Stream also returns. An error
// from fn stops the caller's stream at once and is returned; when no
// other caller shares the run, the run is cancelled, an upstream call
// still under way with it (its breaker hears no failure), before Stream
// returns. Stream returns the same errors
// as Ask otherwise; it sends no event when it returns an error. A panic
// in the pipeline's own code or in fn is returned as an error with its
// stack, as Ask does; fn's stops the stream as its error would.
//
// Identical streamed questions in flight together (the same key as Ask's
// flights) share one run: each caller gets every event from the first,
// a late one what was sent before it came and then the rest; a caller
// that leaves does not stop the others' stream, and the run is cancelled
// only when they have all left. The callers that joined get a copy of the
// Result, marked Shared.
func (p *Pipeline) Stream(ctx context.Context, q tiers.Query, fn func(StreamEvent) error) (res *Result, err error) {
	defer aborted(&res, &err)
	start := time.Now() // the budget counts from here, admission included, as in Ask
	degraded, err := p.admit(ctx, q)
	if err != nil {
		return nil, err
	}
	return p.streamShared(ctx, q, degraded, start, fn)
}

// streamRun is the streaming hook of the stage loop (question.descend): what a
// streamed question adds to Ask's way down the stages. It gives each
// model stage its stream request, whose Emit commits the stage (meta) at
// its first delta; commits a stage that answers whole and sends its
// answer as one delta; and keeps the partial answer of a stream that
// broke after commit, for a later model stage to continue or for the
// note. Its methods take a nil *streamRun, an Ask, as no hook at all.
type streamRun struct {
	fn  func(StreamEvent) error
	err error // the first error of fn: the stream's receiver went away

	// partial is the committed text of an interrupted answer, awaiting
	// continuation (on_stream_break: continue).
	partial *tiers.Answer
	prompt  string // the continuation prompt of the tier whose stream broke
}

// send passes e to fn, remembering fn's first error. A panic in fn is
// taken as its error, with the stack: the stream stops as for any error of
// the receiver, and no model is blamed for it.
func (sr *streamRun) send(e StreamEvent) (err error) {
	if sr.err != nil {
		return sr.err
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("pipeline: stream receiver panicked: %v\n%s", v, debug.Stack())
		}
		sr.err = err
	}()
	return sr.fn(e)
}

// wants reports whether stage s may be called: any stage, until a stream
// broke; then only a model stage that streams can continue the answer.
func (sr *streamRun) wants(s *stage) bool {
	return sr == nil || sr.partial == nil || s.Model && s.streams
}

// stopped returns the receiver's error, which ends the question.
func (sr *streamRun) stopped() error {
	if sr == nil {
		return nil
	}
	return sr.err
}

// pending reports whether a partial answer awaits its end.
func (sr *streamRun) pending() bool { return sr != nil && sr.partial != nil }

// request returns the stream request for stage s, nil if s does not
// stream: its stream settings, the partial answer to continue, and an
// Emit that sends the stage's meta before its first delta.
func (sr *streamRun) request(s *stage) *tiers.StreamRequest {
	if sr == nil || !s.streams {
		return nil
	}
	req := &tiers.StreamRequest{
		FirstTokenTimeout:   s.Stream.FirstTokenTimeout,
		StallTimeout:        s.Stream.StallTimeout,
		CommitAfter:         s.Stream.CommitAfter,
		CommitAfterDuration: s.Stream.CommitAfterDuration,
	}
	if sr.partial != nil {
		req.Continue = sr.partial.Text
		req.ContinuePrompt = sr.prompt
	}
	committed := false
	req.Emit = func(d tiers.Delta) error {
		if !committed {
			committed = true
			if err := sr.commit(s, d.Model); err != nil {
				return err
			}
		}
		return sr.send(StreamEvent{Kind: StreamDelta, Text: d.Text})
	}
	return req
}

// commit sends the meta of stage s, which now writes the answer.
func (sr *streamRun) commit(s *stage, model string) error {
	return sr.send(StreamEvent{Kind: StreamMeta, Source: s.source, Tier: s.name, Model: model, Continued: sr.partial != nil})
}

// broke takes a, the partial answer of stage s whose stream broke after
// commit with err, and reports whether the answer ends now with the note
// rather than on a later model stage (on_stream_break: continue). A model
// that stopped for its content filter refused the content: the next
// model is not asked to carry it on.
func (sr *streamRun) broke(s *stage, a tiers.Answer, err error) bool {
	if sr == nil {
		return false
	}
	joined := sr.join(a)
	sr.partial, sr.prompt = &joined, s.Stream.ContinuePrompt
	return !s.Stream.ContinueOnBreak || tiers.KindOf(err) == tiers.KindContentFilter
}

// join returns a appended to the partial answer it continues, if any.
func (sr *streamRun) join(a tiers.Answer) tiers.Answer {
	if sr.partial == nil {
		return a
	}
	a.Text = sr.partial.Text + a.Text
	a.Usage = sr.partial.Usage.Add(a.Usage)
	if len(a.Docs) == 0 {
		a.Docs = sr.partial.Docs
	}
	return a
}

// done ends the stream of question qn with a, the answer of stage s: a
// stage that does not stream sends it whole, as one delta. A continued
// answer is not written to the caches: it was stitched from two models.
func (sr *streamRun) done(qn *question, s *stage, a tiers.Answer) (*Result, error) {
	if !s.streams {
		if err := sr.commit(s, a.Model); err != nil {
			return nil, err
		}
		if err := sr.send(StreamEvent{Kind: StreamDelta, Text: a.Text}); err != nil {
			return nil, err
		}
	}
	return sr.end(qn.answered(sr.join(a), sr.partial == nil))
}

// interrupted ends the stream of question qn with the partial answer and
// a note.
func (sr *streamRun) interrupted(qn *question) (*Result, error) {
	a := *sr.partial
	a.Interrupted = true
	if err := sr.send(StreamEvent{Kind: StreamNote, Text: interruptedNote[tiers.DetectLanguage(qn.q.Question)]}); err != nil {
		return nil, err
	}
	return sr.end(qn.answered(a, false))
}

// end sends res, the stream's last event.
func (sr *streamRun) end(res *Result) (*Result, error) {
	if err := sr.send(StreamEvent{Kind: StreamDone, Result: res}); err != nil {
		return nil, err
	}
	return res, nil
}
