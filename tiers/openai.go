package tiers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ClientConfig configures an OpenAI-compatible client made by NewClient.
type ClientConfig struct {
	// BaseURL is the endpoint, e.g. "https://api.openai.com/v1"; empty
	// means OpenAI's.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none (e.g. Ollama).
	APIKey string
	// HTTPClient sends the requests; nil means a new http.Client. Its
	// Timeout should be zero: the pipeline bounds each call by context.
	HTTPClient openai.HTTPDoer
}

// NewClient returns a go-openai client whose HTTP client also records the
// Retry-After header of 429 responses, so an LLM tier can report how long
// the model asked to wait (go-openai does not expose response headers on
// errors), and sends the W3C traceparent of the call's tracing span, if
// its context has one, so that a provider's trace joins the question's.
// Clients made otherwise work too, without either.
func NewClient(cfg ClientConfig) *openai.Client {
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	doer := cfg.HTTPClient
	if doer == nil {
		doer = &http.Client{}
	}
	oc.HTTPClient = retryAfterDoer{next: doer}
	return openai.NewClientWithConfig(oc)
}

// callNote is filled in by retryAfterDoer for the request whose context
// carries it.
type callNote struct {
	retryAfter time.Duration
}

type callNoteKey struct{}

// noteCtx is a context carrying a callNote: one allocation for both.
type noteCtx struct {
	context.Context
	note callNote
}

// withNote returns a copy of ctx carrying a new callNote, and the note.
func withNote(ctx context.Context) (context.Context, *callNote) {
	c := &noteCtx{Context: ctx}
	return c, &c.note
}

func (c *noteCtx) Value(key any) any {
	if key == (callNoteKey{}) {
		return &c.note
	}
	return c.Context.Value(key)
}

// retryAfterDoer sends the traceparent of the request's context and
// records the Retry-After of a 429 response into the callNote of the
// request's context.
type retryAfterDoer struct {
	next openai.HTTPDoer
}

func (d retryAfterDoer) Do(req *http.Request) (*http.Response, error) {
	if sc := trace.SpanContextFromContext(req.Context()); sc.IsValid() {
		propagation.TraceContext{}.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	}
	res, err := d.next.Do(req)
	if err != nil || res.StatusCode != http.StatusTooManyRequests {
		return res, err
	}
	if n, ok := req.Context().Value(callNoteKey{}).(*callNote); ok {
		n.retryAfter = parseRetryAfter(res.Header)
	}
	return res, err
}

// maxRetryAfter caps the wait a Retry-After asks for: a provider whose
// quota is spent for days is cooled down this long, then tried again.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads a Retry-After header given in seconds or as an
// HTTP date; a date is taken relative to the response's Date header, so
// no local clock is involved, or to the time of receipt when the response
// has no readable Date (RFC 9110). A longer wait than maxRetryAfter is cut
// to it. It returns 0 when absent or unreadable.
func parseRetryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if !(secs > 0) || math.IsInf(secs, 1) { // NaN too
			return 0
		}
		return time.Duration(min(secs, maxRetryAfter.Seconds()) * float64(time.Second))
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	now, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		now = time.Now()
	}
	if d := at.Sub(now); d > 0 {
		return min(d, maxRetryAfter)
	}
	return 0
}

// classifyCall maps an error of a go-openai call to an *Error with its Kind.
// ctxErr is the call context's error, if any: it wins over what the
// transport made of it.
func classifyCall(tier, model string, err, ctxErr error, retryAfter time.Duration) *Error {
	e := &Error{Kind: KindOther, Tier: tier, Model: model, Err: err}
	var (
		apiErr *openai.APIError
		reqErr *openai.RequestError
		synErr *json.SyntaxError
		typErr *json.UnmarshalTypeError
		netErr net.Error
	)
	switch {
	case errors.Is(ctxErr, context.Canceled) || errors.Is(err, context.Canceled):
		e.Kind = KindCanceled
	case ctxErr != nil || errors.Is(err, context.DeadlineExceeded):
		e.Kind = KindTimeout
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0:
		// An error body go-openai could not fully decode: the status is
		// the RequestError's (an APIError it wraps has none), the codes
		// are read leniently from the body.
		e.Status = reqErr.HTTPStatusCode
		e.Kind = kindOfStatus(reqErr.HTTPStatusCode, bodyErrorCodes(reqErr.Body))
	case errors.As(err, &apiErr):
		e.Status = apiErr.HTTPStatusCode
		e.Kind = kindOfStatus(apiErr.HTTPStatusCode, apiErrorCodes(apiErr))
	case errors.As(err, &synErr), errors.As(err, &typErr):
		e.Kind = KindMalformed
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE):
		e.Kind = KindConnection
	case errors.As(err, &netErr):
		if netErr.Timeout() {
			e.Kind = KindTimeout
		} else {
			e.Kind = KindConnection
		}
	}
	if e.Kind == KindRateLimited {
		e.RetryAfter = retryAfter
	}
	return e
}

// apiErrorCodes returns the codes and type an API error carries, lower
// case, for matching against known provider codes.
func apiErrorCodes(e *openai.APIError) []string {
	codes := appendCode(nil, e.Code)
	codes = appendCode(codes, e.Type)
	if e.InnerError != nil {
		codes = appendCode(codes, e.InnerError.Code)
	}
	return codes
}

// bodyErrorCodes returns the codes and type of an error body that did not
// decode as an APIError, read leniently, lower case.
func bodyErrorCodes(body []byte) []string {
	var r struct {
		Error struct {
			Code       any `json:"code"`
			Type       any `json:"type"`
			InnerError struct {
				Code any `json:"code"`
			} `json:"innererror"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &r) // keeps what decoded
	var codes []string
	for _, v := range []any{r.Error.Code, r.Error.Type, r.Error.InnerError.Code} {
		codes = appendCode(codes, v)
	}
	return codes
}

// appendCode appends error code v, a string (lower-cased) or a number, to
// codes; an empty or other v adds nothing.
func appendCode(codes []string, v any) []string {
	switch c := v.(type) {
	case string:
		if c != "" {
			codes = append(codes, strings.ToLower(c))
		}
	case int:
		codes = append(codes, strconv.Itoa(c))
	case float64:
		codes = append(codes, strconv.FormatFloat(c, 'f', -1, 64))
	}
	return codes
}

// Provider error codes that mark the request's own fault.
var (
	contextLengthCodes = []string{"context_length_exceeded", "string_above_max_length", "context_too_long"}
	contentFilterCodes = []string{"content_filter", "content_policy_violation", "responsibleaipolicyviolation", "data_inspection_failed"}
)

func hasCode(codes, known []string) bool {
	for _, c := range codes {
		for _, k := range known {
			if c == k {
				return true
			}
		}
	}
	return false
}

// kindOfStatus maps an HTTP error status (and provider codes) to a Kind.
func kindOfStatus(status int, codes []string) Kind {
	switch {
	case status == http.StatusTooManyRequests:
		return KindRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return KindAuth
	case status == http.StatusRequestTimeout:
		return KindTimeout
	case status >= 500:
		return KindServer
	case hasCode(codes, contextLengthCodes):
		return KindContextLength
	case hasCode(codes, contentFilterCodes):
		return KindContentFilter
	case status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge ||
		status == http.StatusUnprocessableEntity:
		return KindBadRequest
	}
	// 404 (unknown model), 405 and the like: a broken endpoint, not the
	// question's fault.
	return KindOther
}
