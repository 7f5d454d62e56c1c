package api

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// ChatCompletionChunk is one chunk of a streamed /v1/chat/completions
// answer, in OpenAI's format. The last chunk (the one with a
// finish_reason) also carries ragfuse's own field.
type ChatCompletionChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"` // "chat.completion.chunk"
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chunkChoice     `json:"choices"`
	Usage   *chatUsage        `json:"usage,omitempty"` // only on the usage chunk (stream_options.include_usage)
	Ragfuse *ChunkRagfuseInfo `json:"ragfuse,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
}

// ChunkRagfuseInfo is the "ragfuse" field of the last chunk: how the
// answer was made and whether it broke off. An interrupted answer also
// ends with the note in its content and finish_reason "length", so a
// plain OpenAI client sees it too.
type ChunkRagfuseInfo struct {
	RagfuseInfo
	Model       string `json:"model"`
	Interrupted bool   `json:"interrupted"`
}

// chatStream answers a chat completion request with stream: true.
func (s *Server) chatStream(c echo.Context, req chatRequest, q tiers.Query) error {
	w := newStreamWriter(c)
	// The heartbeat is a blank line, not a ": ping" comment: go-openai
	// keeps every non-data line and prepends it to a later in-stream
	// error, which it then cannot decode as an API error.
	w.keepalive = []byte("\n")
	model := req.Model
	if model == "" {
		model = "ragfuse"
	}
	sink := &chunkSink{s: s, w: w, lang: s.notes.language(c.Request().Header.Get("Accept-Language"), q.Question),
		reqID: requestID(c), model: model, created: time.Now().Unix(),
		usage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	return s.serveStream(c, q, w, sink)
}

// chunkSink writes OpenAI's chunk stream.
type chunkSink struct {
	s       *Server
	w       *streamWriter
	lang    string
	reqID   string
	model   string // the model named in chunks: the answering model once known
	created int64
	usage   bool // send a usage chunk before [DONE]
	roled   bool // the role chunk was sent
}

func (k *chunkSink) chunk(delta chunkDelta, finish *string) ChatCompletionChunk {
	return ChatCompletionChunk{ID: "chatcmpl-" + k.reqID, Object: "chat.completion.chunk", Created: k.created,
		Model: k.model, Choices: []chunkChoice{{Delta: delta, FinishReason: finish}}}
}

func (k *chunkSink) event(e pipeline.StreamEvent) error {
	switch e.Kind {
	case pipeline.StreamMeta:
		if e.Model != "" {
			k.model = e.Model
		}
		if k.roled {
			return nil
		}
		k.roled = true
		return k.w.event("", k.chunk(chunkDelta{Role: "assistant"}, nil))
	case pipeline.StreamDelta:
		return k.w.event("", k.chunk(chunkDelta{Content: e.Text}, nil))
	case pipeline.StreamNote:
		return k.w.event("", k.chunk(chunkDelta{Content: "\n\n" + k.s.notes.interrupted(k.lang)}, nil))
	case pipeline.StreamDone:
		return k.done(e.Result)
	}
	return nil
}

// done sends the last chunk with its finish reason and ragfuse field, the
// usage chunk if asked, and [DONE].
func (k *chunkSink) done(res *pipeline.Result) error {
	a := k.s.askResponse(res, k.lang, k.reqID)
	// The interruption note went out as content already (StreamNote).
	if note := k.s.content("", k.s.notes.note(k.lang, res.Source).Text); note != "" {
		if err := k.w.event("", k.chunk(chunkDelta{Content: note}, nil)); err != nil {
			return err
		}
	}
	finish := "stop"
	if res.Interrupted {
		finish = "length"
	}
	last := k.chunk(chunkDelta{}, &finish)
	last.Ragfuse = &ChunkRagfuseInfo{
		RagfuseInfo: RagfuseInfo{Source: a.Source, Degraded: a.Degraded, Note: a.Note, Actions: a.Actions,
			Docs: a.Docs, Attempts: a.Attempts, RequestID: a.RequestID},
		Model: res.Model, Interrupted: res.Interrupted,
	}
	if err := k.w.event("", last); err != nil {
		return err
	}
	if k.usage {
		u := ChatCompletionChunk{ID: last.ID, Object: last.Object, Created: k.created, Model: k.model,
			Choices: []chunkChoice{}, Usage: &chatUsage{PromptTokens: res.Usage.PromptTokens,
				CompletionTokens: res.Usage.CompletionTokens, TotalTokens: res.Usage.Total()}}
		if err := k.w.event("", u); err != nil {
			return err
		}
	}
	return k.w.write([]byte("data: [DONE]\n\n"))
}

// failed sends an OpenAI-style error in the stream; OpenAI clients raise
// it as an API error.
func (k *chunkSink) failed(err error) error {
	return k.w.event("", streamErrorBody(err, k.reqID))
}
