package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ragfuse/ragfuse/tiers"
)

// HeaderSource carries the answer's source on /v1/chat/completions.
const HeaderSource = "X-Ragfuse-Source"

// chatRequest is the part of an OpenAI chat completion request ragfuse
// reads. Other fields (temperature, tools…) are accepted and ignored: the
// pipeline decides how models are called.
type chatRequest struct {
	Model    string        `json:"model"` // echoed back when no model answered
	Messages []chatMessage `json:"messages"`
	Stream   bool          `json:"stream"`
	// StreamOptions asks, with include_usage, for a usage chunk before
	// [DONE] of a streamed answer.
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	User string `json:"user"` // used as the session id
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns the message content: a string, or the text parts of an
// array of content parts.
func (m chatMessage) text() (string, bool) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), true
}

// ChatCompletion is the OpenAI-shaped answer of /v1/chat/completions, with
// ragfuse's own field beside the standard ones.
type ChatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // "chat.completion"
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
	Ragfuse RagfuseInfo  `json:"ragfuse"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	FinishReason string         `json:"finish_reason"`
}

type chatMessageOut struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// RagfuseInfo is the "ragfuse" field of a ChatCompletion: how the answer
// was made.
type RagfuseInfo struct {
	Source    tiers.Source  `json:"source"`
	Degraded  bool          `json:"degraded"`
	Note      string        `json:"note"`
	Actions   Actions       `json:"actions"`
	Docs      []DocRef      `json:"docs"`
	Attempts  []AttemptInfo `json:"attempts"`
	RequestID string        `json:"request_id"`
}

// decodeChat decodes and validates a chat completion request and returns
// it with the question, the text of the last message, which must be the
// user's, and the earlier user and assistant messages as history. System
// (and developer) messages are ignored: the pipeline's tiers have their
// own prompts. Any other role (tool, function…) is refused: ragfuse
// answers from its knowledge base and calls no tools.
func decodeChat(body []byte, l limits) (chatRequest, string, []turnText, error) {
	var req chatRequest
	if !validJSONText(body) {
		return req, "", nil, newError(http.StatusBadRequest, CodeInvalidUTF8, "the body is not valid UTF-8")
	}
	if err := decodeStrict(body, &req, false); err != nil {
		return chatRequest{}, "", nil, err
	}
	var turns []turnText
	for i, m := range req.Messages {
		path := "messages[" + strconv.Itoa(i) + "]"
		switch m.Role {
		case "system", "developer":
			continue
		case tiers.RoleUser, tiers.RoleAssistant:
		default:
			return chatRequest{}, "", nil, newError(http.StatusBadRequest, CodeUnsupportedRole,
				path+".role "+strconv.Quote(m.Role)+` is not supported (use "system", "user" or "assistant"; ragfuse calls no tools)`)
		}
		t, ok := m.text()
		if !ok {
			return chatRequest{}, "", nil, newError(http.StatusBadRequest, CodeBadJSON, path+".content must be a string or an array of text parts")
		}
		turns = append(turns, turnText{role: m.Role, content: t, path: path})
	}
	var question string
	if n := len(turns); n > 0 {
		if turns[n-1].role != tiers.RoleUser {
			return chatRequest{}, "", nil, newError(http.StatusBadRequest, CodeBadRequest, "the last message must be the user's question")
		}
		question, turns = turns[n-1].content, turns[:n-1]
	}
	question, err := checkQuestion(question, l)
	if err != nil {
		return chatRequest{}, "", nil, err
	}
	if err := checkSession(req.User); err != nil {
		return chatRequest{}, "", nil, err
	}
	return req, question, turns, nil
}

// chatCompletions serves POST /v1/chat/completions.
func (s *Server) chatCompletions(c echo.Context) error {
	body, err := readJSONBody(c.Request(), s.lim)
	if err != nil {
		return err
	}
	req, question, turns, err := decodeChat(body, s.lim)
	if err != nil {
		return err
	}
	hist, err := history(turns, s.lim)
	if err != nil {
		return err
	}
	tenant, err := resolveTenant(c, c.Request().Header.Get(HeaderTenant))
	if err != nil {
		return err
	}
	q := tiers.Query{Tenant: tenant, Session: req.User, Question: question, History: hist}
	if req.Stream {
		return s.chatStream(c, req, q)
	}
	res, err := s.run(c, q)
	if err != nil {
		return err
	}
	lang := s.notes.language(c.Request().Header.Get("Accept-Language"), q.Question)
	a := s.askResponse(res, lang, requestID(c))
	model := res.Model
	if model == "" {
		model = req.Model
	}
	if model == "" {
		model = "ragfuse"
	}
	finish := "stop"
	if res.Interrupted {
		finish = "length"
	}
	out := ChatCompletion{
		ID:      "chatcmpl-" + a.RequestID,
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   model,
		Choices: []chatChoice{{Message: chatMessageOut{Role: "assistant", Content: s.content(res.Text, a.Note)}, FinishReason: finish}},
		Usage: chatUsage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens,
			TotalTokens: res.Usage.Total()},
		Ragfuse: RagfuseInfo{Source: a.Source, Degraded: a.Degraded, Note: a.Note, Actions: a.Actions,
			Docs: a.Docs, Attempts: a.Attempts, RequestID: a.RequestID},
	}
	c.Response().Header().Set(HeaderSource, string(res.Source))
	return c.JSON(http.StatusOK, out)
}

// content returns the message content of an answer: its text, with its
// note after a blank line when OpenAIOptions.NoteInContent is set.
func (s *Server) content(text, note string) string {
	if !s.openai.NoteInContent || note == "" {
		return text
	}
	return text + "\n\n" + note
}
