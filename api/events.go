package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// statusEvery is how often GET /v1/events sends the status.
const statusEvery = time.Second

// events serves GET /v1/events, the console's live feed, as Server-Sent
// Events: first "history" (answers by source per 10 s over the last five
// minutes, and the latest questions), then "status" (the body of GET
// /v1/status) every second and "question" as each question ends. It ends
// when the client goes away or the server shuts down (503 once shutdown
// has begun).
func (s *Server) events(c echo.Context) error {
	if s.draining.Load() {
		return newError(http.StatusServiceUnavailable, CodeUnavailable, "shutting down")
	}
	questions, cancel := s.feed.subscribe()
	defer cancel()
	w := newStreamWriter(c)
	if err := w.event("history", s.feed.history(time.Now())); err != nil {
		return nil // the client is gone
	}
	if err := w.event("status", s.statusBody()); err != nil {
		return nil
	}
	tick := time.NewTicker(statusEvery)
	defer tick.Stop()
	ctx := c.Request().Context()
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case <-s.quit:
			return nil
		case <-tick.C:
			err = w.event("status", s.statusBody())
		case q := <-questions:
			err = w.event("question", q.sendable())
		}
		if err != nil {
			return nil // the client is gone
		}
	}
}

// remember adds the question q, asked through c, to the console's feed:
// answered with res, or failed with err.
func (s *Server) remember(c echo.Context, q tiers.Query, start time.Time, res *pipeline.Result, err error) {
	ev := questionEvent{Time: time.Now().UTC(), RequestID: requestID(c), Tenant: q.Tenant,
		DurationMS: time.Since(start).Milliseconds()}
	if s.consoleOpts.ShowQuestions {
		ev.Question = q.Question
	}
	if err != nil {
		ev.Source, ev.Error = "error", errorStatus(err).Code
	} else {
		ev.Source, ev.Degraded, ev.attempts = string(res.Source), res.Degraded, res.Attempts
	}
	s.feed.add(ev)
}
