package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// HeaderRequestID carries the request id in both directions.
const HeaderRequestID = "X-Request-Id"

const requestIDKey = "ragfuse.request_id"

// maxRequestIDLen bounds an incoming request id.
const maxRequestIDLen = 128

// saneRequestID reports whether an incoming request id may be reused:
// 1-128 characters of [A-Za-z0-9._:-], so it is safe in logs and headers.
func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.' || c == '_' || c == ':' || c == '-':
		default:
			return false
		}
	}
	return true
}

// newRequestID returns 16 random bytes in hex.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// withRequestID keeps a sane incoming X-Request-Id or makes one, and sets
// it on the response before the handler runs.
func withRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(HeaderRequestID)
		if !saneRequestID(id) {
			id = newRequestID()
		}
		c.Set(requestIDKey, id)
		c.Response().Header().Set(HeaderRequestID, id)
		return next(c)
	}
}

// requestID returns the request id set by withRequestID.
func requestID(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}

// recoverPanics turns a panic in a handler into a logged error with its
// stack and a 500 JSON response carrying the request id. The stack goes to
// the log, never to the client. http.ErrAbortHandler is re-raised, as
// net/http expects.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if e, ok := r.(error); ok && errors.Is(e, http.ErrAbortHandler) {
				panic(r)
			}
			s.logPanic(c.Request().Context(), requestID(c), c.Path(), r)
			err = newError(http.StatusInternalServerError, CodeInternal, "internal error")
		}()
		return next(c)
	}
}

// logPanic logs panic value r, recovered while serving request reqID on
// path, with the stack.
func (s *Server) logPanic(ctx context.Context, reqID, path string, r any) {
	s.log.LogAttrs(ctx, slog.LevelError, "panic recovered",
		slog.String("request_id", reqID),
		slog.String("path", path),
		slog.String("panic", fmt.Sprint(r)),
		slog.String("stack", string(debug.Stack())))
}

// countRequests feeds the HTTP request counter and latency histogram.
func (s *Server) countRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err) // write the response now, so its status is known
			err = nil
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		s.obs.httpRequest(route, methodLabel(c.Request().Method), strconv.Itoa(c.Response().Status), time.Since(start))
		return err
	}
}

// methodLabel bounds the method label: a client may send any token as a
// method, and each would otherwise add a time series for good.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}
