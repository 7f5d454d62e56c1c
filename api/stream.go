package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// DefaultStreamHeartbeat is how often a stream with nothing to send writes
// a comment line, so proxies and clients see it alive.
const DefaultStreamHeartbeat = 5 * time.Second

// streamEnd is how pipeline.Stream returned.
type streamEnd struct {
	res *pipeline.Result
	err error
}

// eventPump runs a streamed question on its own goroutine and hands the
// events to the handler's goroutine, which alone writes the response and
// so can interleave heartbeats. close cancels the question and waits for
// the goroutine: nothing outlives the request.
type eventPump struct {
	events <-chan pipeline.StreamEvent
	end    <-chan streamEnd
	cancel context.CancelFunc
	ended  bool
}

func (s *Server) startPump(ctx context.Context, q tiers.Query, reqID, path string) *eventPump {
	ctx, cancel := context.WithCancel(ctx)
	events := make(chan pipeline.StreamEvent)
	end := make(chan streamEnd, 1)
	go func() {
		var (
			res *pipeline.Result
			err error
		)
		// A panic here is out of recoverPanics' reach (another
		// goroutine): recover it the same way, so that it ends this
		// question with an internal error instead of the process.
		defer func() {
			if r := recover(); r != nil {
				s.logPanic(context.WithoutCancel(ctx), reqID, path, r)
				res, err = nil, newError(http.StatusInternalServerError, CodeInternal, "internal error")
			}
			end <- streamEnd{res, err}
		}()
		res, err = s.p.Stream(ctx, q, func(e pipeline.StreamEvent) error {
			select {
			case events <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return &eventPump{events: events, end: end, cancel: cancel}
}

func (p *eventPump) close() {
	p.cancel()
	if !p.ended {
		<-p.end
		p.ended = true
	}
}

// abandon cancels the question of a client that went away, waits for it
// to end and returns how it ended.
func (p *eventPump) abandon() streamEnd {
	p.cancel()
	end := <-p.end
	p.ended = true
	return end
}

// streamWriter writes Server-Sent Events and flushes each one. The
// headers go out with the first write; until then an error can still be
// sent as a normal JSON response.
type streamWriter struct {
	c       echo.Context
	rc      *http.ResponseController
	started bool
	source  tiers.Source // set before start: sent as X-Ragfuse-Source when known
	// keepalive is the heartbeat sent while nothing else is; nil means a
	// ": ping" comment.
	keepalive []byte
}

func newStreamWriter(c echo.Context) *streamWriter {
	return &streamWriter{c: c, rc: http.NewResponseController(c.Response())}
}

// start sends the SSE headers.
func (w *streamWriter) start() {
	if w.started {
		return
	}
	w.started = true
	h := w.c.Response().Header()
	h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	if w.source != "" {
		h.Set(HeaderSource, string(w.source))
	}
	w.c.Response().WriteHeader(http.StatusOK)
}

// write sends raw SSE lines and flushes them. An error means the client
// is gone.
func (w *streamWriter) write(b []byte) error {
	w.start()
	if _, err := w.c.Response().Write(b); err != nil {
		return err
	}
	return w.rc.Flush()
}

// event sends one named event with v as its JSON data line. A v that
// cannot be encoded is an *encodeError, not a client gone.
func (w *streamWriter) event(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return &encodeError{err}
	}
	buf := make([]byte, 0, len(name)+len(data)+16)
	if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	return w.write(buf)
}

// encodeError is an event whose data could not be encoded: a failure on
// this side, sent to the client as the stream's error.
type encodeError struct{ err error }

func (e *encodeError) Error() string { return "encoding a stream event: " + e.err.Error() }
func (e *encodeError) Unwrap() error { return e.err }

func (w *streamWriter) ping() error {
	if w.keepalive != nil {
		return w.write(w.keepalive)
	}
	return w.write([]byte(": ping\n\n"))
}

// streamSink receives a streamed question's events, shaped for one wire
// format (ragfuse's SSE or OpenAI's chunks). An error means the client is
// gone, unless it is an *encodeError.
type streamSink interface {
	event(e pipeline.StreamEvent) error
	// failed reports an error after the stream started.
	failed(err error) error
}

// serveStream runs q and feeds its events to sink through w, with
// heartbeats while waiting. An error before anything was sent is returned
// for the normal JSON error response.
func (s *Server) serveStream(c echo.Context, q tiers.Query, w *streamWriter, sink streamSink) error {
	start := time.Now()
	s.startQuestion(c, q)
	ctx := c.Request().Context()
	pump := s.startPump(ctx, q, requestID(c), c.Path())
	defer pump.close()
	tally := s.obs.streamTally(start)
	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	for {
		select {
		case e := <-pump.events:
			tally.event(e, time.Now())
			if e.Kind == pipeline.StreamMeta && !w.started {
				w.source = e.Source
			}
			if e.Kind == pipeline.StreamDone {
				tick.Stop() // nothing is sent after done
			}
			if err := sink.event(e); err != nil {
				end := pump.abandon()
				var ee *encodeError
				if !errors.As(err, &ee) {
					s.logStream(c, q, start, end) // the client is gone
					return nil
				}
				s.logStream(c, q, start, streamEnd{err: err})
				if !w.started {
					return err // a JSON 500, logged by errorHandler
				}
				s.log.LogAttrs(context.WithoutCancel(ctx), slog.LevelError, "request failed",
					slog.String("request_id", requestID(c)), slog.String("path", c.Path()),
					slog.String("error", err.Error()))
				_ = sink.failed(err)
				return nil
			}
			if e.Kind != pipeline.StreamDone {
				tick.Reset(s.heartbeat) // a ping only after a silence
			}
		case <-tick.C:
			if err := w.ping(); err != nil {
				s.logStream(c, q, start, pump.abandon())
				return nil
			}
		case end := <-pump.end:
			pump.ended = true
			s.logStream(c, q, start, end)
			if end.err == nil {
				return nil
			}
			if !w.started {
				return end.err
			}
			_ = sink.failed(end.err)
			return nil
		}
	}
}

// logStream logs one line for a streamed question and finishes it.
func (s *Server) logStream(c echo.Context, q tiers.Query, start time.Time, end streamEnd) {
	defer s.finish(c, q, start, end.res, end.err)
	ctx := context.WithoutCancel(c.Request().Context())
	attrs := []slog.Attr{
		slog.String("request_id", requestID(c)),
		slog.String("tenant", q.Tenant),
		slog.Bool("stream", true),
		slog.Int64("duration_ms", time.Since(start).Milliseconds()),
	}
	if end.err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "question failed", append(attrs, slog.String("error", errorStatus(end.err).Code))...)
		return
	}
	res := end.res
	s.log.LogAttrs(ctx, slog.LevelInfo, "question answered", append(attrs,
		slog.String("source", string(res.Source)),
		slog.Bool("degraded", res.Degraded),
		slog.Bool("interrupted", res.Interrupted),
		slog.String("model", res.Model),
		slog.String("attempts", attemptSummary(res.Attempts)))...)
}
