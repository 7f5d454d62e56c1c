package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ragfuse/ragfuse/pipeline"
)

// The error codes of the {"error": {"code", ...}} body.
const (
	CodeBadJSON          = "bad_json"                // 400: the body is not one JSON object of the expected shape
	CodeUnknownField     = "unknown_field"           // 400: /v1/ask got a field it does not know
	CodeEmptyQuestion    = "empty_question"          // 400: no question, or only white space, control and format characters
	CodeInvalidUTF8      = "invalid_utf8"            // 400: the body is not valid UTF-8
	CodeInvalidTenant    = "invalid_tenant"          // 400: tenant_id is not 1-64 of [A-Za-z0-9_.-]
	CodeInvalidSession   = "invalid_session"         // 400: session_id is longer than 128 bytes
	CodeInvalidHistory   = "invalid_history"         // 400: a history turn of an unknown role, or without readable content
	CodeUnsupportedRole  = "unsupported_role"        // 400: a chat message of a role other than system, user and assistant
	CodeHistoryTooLong   = "history_too_long"        // 413: the history kept is over server.max_history_bytes
	CodeBadFault         = "bad_fault"               // 400: a demo fault that cannot be served
	CodeUnauthorized     = "unauthorized"            // 401: missing or unknown API key
	CodeTenantMismatch   = "tenant_mismatch"         // 403: tenant_id differs from the API key's tenant
	CodeForbidden        = "forbidden"               // 403: an admin route without an admin key (or, with no keys, not from loopback); a question with an admin key
	CodeNotFound         = "not_found"               // 404: no such route, demo model or breaker
	CodeMethodNotAllowed = "method_not_allowed"      // 405: the route exists for other methods
	CodeTimeoutReading   = "timeout_reading_request" // 408: the body did not arrive within server.read_timeout
	CodeQuestionTooLong  = "question_too_long"       // 413: the question is over server.max_question_bytes
	CodeBodyTooLarge     = "body_too_large"          // 413: the body is over server.max_body_bytes
	CodeUnsupportedMedia = "unsupported_media"       // 415: the body is not application/json, or not gzip or identity encoded
	CodeRateLimited      = "rate_limited"            // 429: over a rate limit with on_limit: reject
	CodeClientClosed     = "client_closed"           // 499: the caller went away
	CodeInternal         = "internal"                // 500: a bug; the request id helps find it in the logs
	CodeExhausted        = "exhausted"               // 503: every tier failed (no static tier configured)
	CodeUnavailable      = "unavailable"             // 503: not ready, or shutting down
	CodeTimeout          = "timeout"                 // 504: the request's deadline passed
	CodeReloadFailed     = "reload_failed"           // 409: no knowledge base to reload; 500: it could not be reread
	CodeBadRequest       = "bad_request"             // 4xx: another malformed request
)

const (
	statusClientClosed     = 499         // nginx's code for a client that closed the request
	defaultRetryAfterLimit = time.Second // Retry-After of a 429
)

// Error is an API error: an HTTP status with a machine-readable code and a
// human-readable message. Handlers return it; errorStatus maps any error
// to one.
type Error struct {
	Status     int
	Code       string
	Message    string
	RetryAfter time.Duration // sent as a Retry-After header when > 0
	// Close closes the connection after the response (Connection: close),
	// without reading what is left of the request's body.
	Close bool
}

// Error returns the code and the message.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

func newError(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

// errorStatus maps any error a handler returns to the API error sent to
// the client. It is the only place where errors become HTTP statuses.
func errorStatus(err error) *Error {
	var ae *Error
	var he *echo.HTTPError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, pipeline.ErrRejected):
		return &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited,
			Message: "too many questions; retry later", RetryAfter: defaultRetryAfterLimit}
	case errors.Is(err, pipeline.ErrClosed):
		return newError(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down")
	case errors.Is(err, pipeline.ErrExhausted):
		return newError(http.StatusServiceUnavailable, CodeExhausted, "no tier could answer")
	case errors.Is(err, context.Canceled):
		return newError(statusClientClosed, CodeClientClosed, "the request was canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return newError(http.StatusGatewayTimeout, CodeTimeout, "the request's deadline passed")
	case errors.As(err, &he):
		return echoError(he)
	}
	return newError(http.StatusInternalServerError, CodeInternal, "internal error")
}

// echoError maps the errors echo itself produces (routing, body limit).
func echoError(he *echo.HTTPError) *Error {
	switch he.Code {
	case http.StatusNotFound:
		return newError(he.Code, CodeNotFound, "no such route")
	case http.StatusMethodNotAllowed:
		return newError(he.Code, CodeMethodNotAllowed, "method not allowed on this route")
	case http.StatusRequestEntityTooLarge:
		return newError(he.Code, CodeBodyTooLarge, "request body too large")
	case http.StatusUnsupportedMediaType:
		return newError(he.Code, CodeUnsupportedMedia, "the body must be application/json")
	case http.StatusUnauthorized:
		return newError(he.Code, CodeUnauthorized, "missing or unknown API key")
	case http.StatusServiceUnavailable:
		return newError(he.Code, CodeUnavailable, "service unavailable")
	}
	if he.Code >= 400 && he.Code < 500 {
		return newError(he.Code, CodeBadRequest, http.StatusText(he.Code))
	}
	return newError(http.StatusInternalServerError, CodeInternal, "internal error")
}

// errorBody is the JSON body of every error response. Type mirrors the
// OpenAI error shape so OpenAI SDK clients read the error too.
type errorBody struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Type      string `json:"type"`
		RequestID string `json:"request_id,omitempty"`
	} `json:"error"`
}

// body returns e as the error body of type typ for request reqID.
func (e *Error) body(typ, reqID string) errorBody {
	var b errorBody
	b.Error.Code, b.Error.Message, b.Error.Type, b.Error.RequestID = e.Code, e.Message, typ, reqID
	return b
}

// errorHandler is echo's HTTPErrorHandler: every error leaves as JSON.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae := errorStatus(err)
	if ae.Status >= 500 && ae.Status != http.StatusServiceUnavailable && ae.Status != http.StatusGatewayTimeout {
		s.log.LogAttrs(c.Request().Context(), slog.LevelError, "request failed",
			slog.String("request_id", requestID(c)), slog.String("path", c.Path()),
			slog.String("error", err.Error()))
	}
	typ := "invalid_request_error"
	if ae.Status >= 500 {
		typ = "server_error"
	}
	b := ae.body(typ, requestID(c))
	if ae.RetryAfter > 0 {
		secs := int64((ae.RetryAfter + time.Second - 1) / time.Second)
		c.Response().Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	if ae.Close {
		c.Response().Header().Set("Connection", "close")
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(ae.Status)
		return
	}
	_ = c.JSON(ae.Status, b)
}
