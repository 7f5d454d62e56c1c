package api

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// AskResponse is the body of a 200 answer to POST /v1/ask.
type AskResponse struct {
	Answer    string        `json:"answer"`
	Source    tiers.Source  `json:"source"`   // cache, primary, fallback, stale_cache, retrieval, static
	Degraded  bool          `json:"degraded"` // not from the primary model or the cache
	Model     string        `json:"model"`    // the model that wrote the answer; "" for retrieval and static
	Note      string        `json:"note"`     // what to tell the user about the answer; "" when nothing
	Actions   Actions       `json:"actions"`
	Docs      []DocRef      `json:"docs"`
	Attempts  []AttemptInfo `json:"attempts"`
	RequestID string        `json:"request_id"`
}

// DocRef is a knowledge-base document an answer used or shows.
type DocRef struct {
	ID    string  `json:"id"`
	Title string  `json:"title"`
	Score float64 `json:"score"`
	URL   string  `json:"url,omitempty"`
}

// AttemptInfo is one tier or model candidate the question went through.
type AttemptInfo struct {
	Tier       string `json:"tier"`
	Model      string `json:"model,omitempty"`
	Outcome    string `json:"outcome"` // success, a failure kind (timeout, server_error…) or a skip (breaker_open…)
	DurationMS int64  `json:"duration_ms"`
}

// askQuery reads, validates and authorizes the body of /v1/ask and
// /v1/ask/stream.
func (s *Server) askQuery(c echo.Context) (tiers.Query, error) {
	body, err := readJSONBody(c.Request(), s.lim)
	if err != nil {
		return tiers.Query{}, err
	}
	req, err := decodeAsk(body, s.lim)
	if err != nil {
		return tiers.Query{}, err
	}
	turns := make([]turnText, len(req.History))
	for i, t := range req.History {
		turns[i] = turnText{role: t.Role, content: t.Content, path: "history[" + strconv.Itoa(i) + "]"}
	}
	hist, err := history(turns, s.lim)
	if err != nil {
		return tiers.Query{}, err
	}
	tenant, err := resolveTenant(c, req.TenantID)
	if err != nil {
		return tiers.Query{}, err
	}
	return tiers.Query{Tenant: tenant, Session: req.SessionID, Question: req.Question, History: hist}, nil
}

// ask serves POST /v1/ask.
func (s *Server) ask(c echo.Context) error {
	q, err := s.askQuery(c)
	if err != nil {
		return err
	}
	res, err := s.run(c, q)
	if err != nil {
		return err
	}
	lang := s.notes.language(c.Request().Header.Get("Accept-Language"), q.Question)
	return c.JSON(http.StatusOK, s.askResponse(res, lang, requestID(c)))
}

// run asks the pipeline and logs one line for the question.
func (s *Server) run(c echo.Context, q tiers.Query) (*pipeline.Result, error) {
	start := time.Now()
	s.startQuestion(c, q)
	ctx := c.Request().Context()
	res, err := s.p.Ask(ctx, q)
	defer s.finish(c, q, start, res, err)
	attrs := []slog.Attr{
		slog.String("request_id", requestID(c)),
		slog.String("tenant", q.Tenant),
		slog.Int64("duration_ms", time.Since(start).Milliseconds()),
	}
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "question failed", append(attrs, slog.String("error", errorStatus(err).Code))...)
		return nil, err
	}
	attrs = append(attrs,
		slog.String("source", string(res.Source)),
		slog.Bool("degraded", res.Degraded),
		slog.String("model", res.Model),
		slog.String("attempts", attemptSummary(res.Attempts)))
	if res.Shared {
		attrs = append(attrs, slog.Bool("shared", true))
	}
	s.log.LogAttrs(context.WithoutCancel(ctx), slog.LevelInfo, "question answered", attrs...)
	return res, nil
}

// attemptSummary writes attempts as "primary/qwen3-max:timeout:2.001s fallback/qwen-turbo:success:312ms".
func attemptSummary(as []pipeline.Attempt) string {
	var b strings.Builder
	for i, a := range as {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a.Tier)
		if a.Model != "" {
			b.WriteByte('/')
			b.WriteString(a.Model)
		}
		b.WriteByte(':')
		b.WriteString(a.Outcome)
		b.WriteByte(':')
		b.WriteString(a.Duration.Round(time.Millisecond).String())
	}
	return b.String()
}

// askResponse shapes a pipeline result for the client.
func (s *Server) askResponse(res *pipeline.Result, lang, reqID string) AskResponse {
	n := s.notes.note(lang, res.Source)
	note := n.Text
	if res.Interrupted {
		note = joinNotes(note, s.notes.interrupted(lang))
		n.Actions.Refresh = true
	}
	return AskResponse{
		Answer:    res.Text,
		Source:    res.Source,
		Degraded:  res.Degraded,
		Model:     res.Model,
		Note:      note,
		Actions:   n.Actions,
		Docs:      docRefs(res),
		Attempts:  attemptInfos(res.Attempts),
		RequestID: reqID,
	}
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

func docRefs(res *pipeline.Result) []DocRef {
	out := make([]DocRef, 0, len(res.Docs))
	for _, d := range res.Docs {
		out = append(out, DocRef{ID: d.ID, Title: d.Title, Score: roundScore(d.Score), URL: d.URL})
	}
	return out
}

// roundScore keeps three decimals, enough to rank and easy to read. Its
// result is always finite, as JSON needs: NaN and ±Inf become 0, and a
// score too large to scale is returned as it is.
func roundScore(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	r := math.Round(f*1000) / 1000
	if math.IsInf(r, 0) { // f*1000 overflowed
		return f
	}
	return r
}

func attemptInfos(as []pipeline.Attempt) []AttemptInfo {
	out := make([]AttemptInfo, 0, len(as))
	for _, a := range as {
		out = append(out, AttemptInfo{Tier: a.Tier, Model: a.Model, Outcome: a.Outcome, DurationMS: a.Duration.Milliseconds()})
	}
	return out
}
