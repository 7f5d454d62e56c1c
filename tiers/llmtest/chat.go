package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// chatRequest is the part of an OpenAI chat completion request the server
// reads.
type chatRequest struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	Stream              bool          `json:"stream"`
	MaxTokens           int           `json:"max_tokens"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns the message content, a string or an array of text parts.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func newUsage(prompt, completion int) *usage {
	return &usage{prompt, completion, prompt + completion}
}

type chatMessageOut struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatMessageOut `json:"message,omitempty"`
	Delta        *chatMessageOut `json:"delta,omitempty"`
	FinishReason *string         `json:"finish_reason"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
}

// completion is one prepared answer.
type completion struct {
	id      string
	created int64
	model   string
	prompt  int      // prompt tokens
	pieces  []string // answer tokens, one stream chunk each
	finish  string   // "stop", or "length" when max_tokens cut the answer
	usage   bool     // stream: send a usage chunk
}

// prepare parses and checks a chat request. It writes the error response
// and returns false when the request cannot be served.
func (s *Server) prepare(w http.ResponseWriter, r *http.Request) (chatRequest, completion, bool) {
	var req chatRequest
	if !readJSON(w, r, &req) {
		return req, completion{}, false
	}
	if !s.checkModel(w, req.Model) {
		return req, completion{}, false
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "messages must not be empty")
		return req, completion{}, false
	}
	var texts []string
	var user string
	prompt := 0
	for _, m := range req.Messages {
		t := m.text()
		texts = append(texts, t)
		prompt += countTokens(t) + 1
		if m.Role == "user" {
			user = t
		}
	}
	if user == "" {
		user = texts[len(texts)-1]
	}
	c := completion{
		id:      fmt.Sprintf("chatcmpl-llmtest-%d", s.nextID()),
		created: s.clock.Now().Unix(),
		model:   req.Model,
		prompt:  prompt,
		pieces:  pieces(answerText(req.Model, user, texts)),
		finish:  "stop",
		usage:   req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
	}
	limit := req.MaxCompletionTokens
	if req.MaxTokens > 0 && (limit == 0 || req.MaxTokens < limit) {
		limit = req.MaxTokens
	}
	if limit > 0 && limit < len(c.pieces) {
		c.pieces, c.finish = c.pieces[:limit], "length"
	}
	return req, c, true
}

// handleChat serves POST /v1/chat/completions.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	req, c, ok := s.prepare(w, r)
	if !ok {
		return
	}
	f := s.countCall(req.Model, func(st *Stats) {
		st.Calls++
		if req.Stream {
			st.StreamCalls++
		}
	})
	if s.common(w, r, f) {
		return
	}
	if req.Stream {
		s.stream(w, r, f, c)
		return
	}
	s.plain(w, r, f, c)
}

// common serves the faults that behave alike for plain and streamed
// requests. It returns true when the request was answered.
func (s *Server) common(w http.ResponseWriter, r *http.Request, f Fault) bool {
	switch f.Mode {
	case ModeLatency:
		if f.Delay <= 0 || s.wait(r.Context(), f.Delay) { // wait would hang on 0
			return false // go on and answer
		}
		abort(w, false)
		return true
	case ModeHang:
		s.wait(r.Context(), 0)
		abort(w, false)
		return true
	case ModeStatus:
		writeStatusFault(w, f)
		return true
	case ModeRateLimit:
		writeRateLimit(w, f)
		return true
	case ModeReset:
		abort(w, true)
		return true
	case ModeOK, ModeBreak, ModeStall, ModeMalformed, ModeEmpty:
		return false
	}
	writeError(w, http.StatusInternalServerError, "server_error", "unknown_fault", "llmtest: unknown fault mode "+string(f.Mode))
	return true
}

// plain answers a non-streamed request.
func (s *Server) plain(w http.ResponseWriter, r *http.Request, f Fault, c completion) {
	malformed := fmt.Sprintf(`{"id": %q, "object": "chat.completion", "choices": [{"message": {"content": oops}}]`, c.id)
	if s.plainFault(w, r, f, c.model, c.prompt, malformed) {
		return
	}
	resp := chatResponse{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model, Choices: []chatChoice{}}
	completionTokens := 0
	if f.Mode != ModeEmpty {
		completionTokens = len(c.pieces)
		finish := c.finish
		resp.Choices = append(resp.Choices, chatChoice{
			Message:      &chatMessageOut{Role: "assistant", Content: strings.Join(c.pieces, "")},
			FinishReason: &finish,
		})
	}
	resp.Usage = newUsage(c.prompt, completionTokens)
	s.count(c.model, func(st *Stats) {
		st.PromptTokens += int64(c.prompt)
		st.CompletionTokens += int64(completionTokens)
	})
	writeJSON(w, http.StatusOK, resp)
}
