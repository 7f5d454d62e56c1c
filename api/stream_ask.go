package api

import (
	"github.com/labstack/echo/v4"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// StreamMetaData is the data of a "meta" event of POST /v1/ask/stream: the
// tier that now writes the answer. A second meta with Continued set says
// which model continues an interrupted answer.
type StreamMetaData struct {
	Source    tiers.Source `json:"source"`
	Tier      string       `json:"tier"`
	Model     string       `json:"model"` // "" for retrieval, static and cache answers without a model
	Degraded  bool         `json:"degraded"`
	Continued bool         `json:"continued"`
	RequestID string       `json:"request_id"`
}

// StreamDeltaData is the data of a "delta" event: the next piece of text.
type StreamDeltaData struct {
	Text string `json:"text"`
}

// The kinds of StreamNoteData.
const (
	NoteDegraded    = "degraded"    // the answer comes from a lesser source
	NoteInterrupted = "interrupted" // the answer broke off and may be incomplete
)

// StreamNoteData is the data of a "note" event: what to tell the user.
type StreamNoteData struct {
	Kind    string  `json:"kind"` // NoteDegraded or NoteInterrupted
	Text    string  `json:"text"`
	Actions Actions `json:"actions"`
}

// StreamDoneData is the data of the "done" event: the whole answer as
// /v1/ask would return it, whether it was interrupted, and the tokens it
// cost.
type StreamDoneData struct {
	AskResponse
	Interrupted bool        `json:"interrupted"`
	Usage       tiers.Usage `json:"usage"`
}

// askStream serves POST /v1/ask/stream: the body and its validation are
// those of /v1/ask; the answer comes as Server-Sent Events "meta",
// "delta", "note" and "done" (or "error" after the stream began), with
// ": ping" comments while waiting.
func (s *Server) askStream(c echo.Context) error {
	q, err := s.askQuery(c)
	if err != nil {
		return err
	}
	w := newStreamWriter(c)
	sink := &sseSink{s: s, w: w, lang: s.notes.language(c.Request().Header.Get("Accept-Language"), q.Question), reqID: requestID(c)}
	return s.serveStream(c, q, w, sink)
}

// sseSink writes ragfuse's own event stream.
type sseSink struct {
	s     *Server
	w     *streamWriter
	lang  string
	reqID string
	note  string // the last degradation note sent
}

func (k *sseSink) event(e pipeline.StreamEvent) error {
	switch e.Kind {
	case pipeline.StreamMeta:
		err := k.w.event("meta", StreamMetaData{Source: e.Source, Tier: e.Tier, Model: e.Model,
			Degraded:  e.Source != tiers.SourcePrimary && e.Source != tiers.SourceCache,
			Continued: e.Continued, RequestID: k.reqID})
		if err != nil {
			return err
		}
		n := k.s.notes.note(k.lang, e.Source)
		if n.Text == "" || n.Text == k.note {
			return nil
		}
		k.note = n.Text
		return k.w.event("note", StreamNoteData{Kind: NoteDegraded, Text: n.Text, Actions: n.Actions})
	case pipeline.StreamDelta:
		return k.w.event("delta", StreamDeltaData{Text: e.Text})
	case pipeline.StreamNote:
		return k.w.event("note", StreamNoteData{Kind: NoteInterrupted, Text: k.s.notes.interrupted(k.lang),
			Actions: Actions{Refresh: true}})
	case pipeline.StreamDone:
		res := e.Result
		return k.w.event("done", StreamDoneData{AskResponse: k.s.askResponse(res, k.lang, k.reqID),
			Interrupted: res.Interrupted, Usage: res.Usage})
	}
	return nil
}

func (k *sseSink) failed(err error) error {
	return k.w.event("error", streamErrorBody(err, k.reqID))
}

// streamErrorBody is the error body sent inside a stream that has begun,
// where the HTTP status can no longer say it.
func streamErrorBody(err error, reqID string) errorBody {
	return errorStatus(err).body("server_error", reqID)
}
