package api

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// AskRequest is the body of POST /v1/ask. Unknown fields are refused
// (400 unknown_field), so a misspelt "tenant" cannot silently send a
// question to the default tenant.
type AskRequest struct {
	TenantID  string `json:"tenant_id"`  // optional; with API keys it must match the key's tenant
	SessionID string `json:"session_id"` // optional; at most 128 bytes
	Question  string `json:"question"`   // required; at most server.max_question_bytes
	// History holds the earlier turns of the conversation, oldest first;
	// see ServerOptions.MaxHistoryTurns and MaxHistoryBytes.
	History []HistoryTurn `json:"history"`
}

// HistoryTurn is one earlier message of a conversation.
type HistoryTurn struct {
	Role    string `json:"role"`    // "user" or "assistant"
	Content string `json:"content"` // not empty
}

// limits bounds what a request may carry.
type limits struct {
	maxBody      int // bytes of the body
	maxQuestion  int // bytes of the question
	historyTurns int // turns of history kept, the newest
	historyBytes int // bytes of the history kept
}

const maxSessionBytes = 128

// readJSONBody checks the content type and reads at most l.maxBody bytes
// of a valid UTF-8 body. A gzip body (Content-Encoding: gzip) is decoded,
// and its l.maxBody bound holds before and after decoding; any other
// encoding but identity is 415. A body still arriving when the server's
// read timeout passes is 408, and its connection is closed.
func readJSONBody(r *http.Request, l limits) ([]byte, error) {
	if err := checkJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	var body io.Reader = http.MaxBytesReader(nil, r.Body, int64(l.maxBody))
	gzipped := false
	switch strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))) {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, bodyError(err, true)
		}
		defer zr.Close()
		body, gzipped = http.MaxBytesReader(nil, zr, int64(l.maxBody)), true
	default:
		return nil, newError(http.StatusUnsupportedMediaType, CodeUnsupportedMedia,
			"Content-Encoding must be gzip or identity")
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, bodyError(err, gzipped)
	}
	if !utf8.Valid(b) {
		return nil, newError(http.StatusBadRequest, CodeInvalidUTF8, "the body is not valid UTF-8")
	}
	return b, nil
}

// bodyError maps an error reading a body (decoded from gzip if gzipped)
// to the API error.
func bodyError(err error, gzipped bool) *Error {
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &Error{Status: http.StatusRequestTimeout, Code: CodeTimeoutReading,
			Message: "the request body did not arrive within the server's read timeout", Close: true}
	case errors.As(err, &mbe):
		return newError(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body too large")
	case gzipped:
		return newError(http.StatusBadRequest, CodeBadRequest, "the body is not valid gzip")
	}
	return newError(http.StatusBadRequest, CodeBadJSON, "could not read the request body")
}

// checkJSONContentType accepts application/json with an optional charset
// of utf-8, and nothing else.
func checkJSONContentType(ct string) error {
	bad := newError(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, "the body must be application/json")
	if ct == "" {
		return bad
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return bad
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return bad
	}
	return nil
}

// decodeStrict decodes exactly one JSON object into v. With strict set,
// unknown fields are an error.
func decodeStrict(body []byte, v any, strict bool) error {
	// encoding/json decodes null into a struct as a no-op: refuse
	// anything but an object here.
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		return newError(http.StatusBadRequest, CodeBadJSON, "the body must be one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		if strict && strings.HasPrefix(err.Error(), "json: unknown field ") {
			// encoding/json offers no typed error for this case.
			return newError(http.StatusBadRequest, CodeUnknownField,
				"unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return newError(http.StatusBadRequest, CodeBadJSON, "the body must be one JSON object: "+jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return newError(http.StatusBadRequest, CodeBadJSON, "the body must be one JSON object: trailing data")
	}
	return nil
}

// jsonProblem describes a decoding error without echoing the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return "syntax error"
	case errors.As(err, &te):
		if te.Field != "" {
			return "wrong type for " + te.Field
		}
		return "wrong type"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "empty or truncated"
	}
	return "malformed"
}

// validJSONText reports whether body is valid UTF-8 and holds no lone
// surrogate escape (\ud800 without its pair), which encoding/json would
// silently turn into U+FFFD.
func validJSONText(body []byte) bool {
	if !utf8.Valid(body) {
		return false
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' || i+1 >= len(body) {
			continue
		}
		i++ // the escaped character: a backslash escapes only the next one
		if body[i] != 'u' {
			continue
		}
		r, ok := hex4(body[i+1:])
		if !ok {
			continue // a syntax error, left to the decoder
		}
		i += 4
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return false // a low surrogate without its high one
		case r >= 0xd800 && r <= 0xdbff:
			rest := body[i+1:]
			if len(rest) < 6 || rest[0] != '\\' || rest[1] != 'u' {
				return false
			}
			lo, ok := hex4(rest[2:])
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return false
			}
			i += 6
		}
	}
	return true
}

// hex4 reads four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// decodeAsk decodes and validates the body of /v1/ask. Every error it
// returns is an *Error with a 4xx status.
func decodeAsk(body []byte, l limits) (AskRequest, error) {
	var req AskRequest
	if !validJSONText(body) {
		return req, newError(http.StatusBadRequest, CodeInvalidUTF8, "the body is not valid UTF-8")
	}
	if err := decodeStrict(body, &req, true); err != nil {
		return AskRequest{}, err
	}
	q, err := checkQuestion(req.Question, l)
	if err != nil {
		return AskRequest{}, err
	}
	req.Question = q
	if req.TenantID != "" && !validTenant(req.TenantID) {
		return AskRequest{}, newError(http.StatusBadRequest, CodeInvalidTenant, "tenant_id must be 1-64 characters of A-Z a-z 0-9 _ . -")
	}
	if err := checkSession(req.SessionID); err != nil {
		return AskRequest{}, err
	}
	for i, t := range req.History {
		if err := checkTurn(t.Role, "history["+strconv.Itoa(i)+"]"); err != nil {
			return AskRequest{}, err
		}
	}
	return req, nil
}

// checkQuestion validates a question and returns it without its control
// characters (cleanText): it must have something to read, be at most
// l.maxQuestion bytes as sent and valid UTF-8. (encoding/json turns
// invalid bytes and lone surrogate escapes into U+FFFD, so callers check
// the raw body as well.)
func checkQuestion(q string, l limits) (string, error) {
	clean, readable := cleanText(q)
	if !readable {
		return "", newError(http.StatusBadRequest, CodeEmptyQuestion,
			"question is required, and must hold more than white space, control and format characters")
	}
	if len(q) > l.maxQuestion {
		return "", newError(http.StatusRequestEntityTooLarge, CodeQuestionTooLong,
			"the question is longer than the limit of "+strconv.Itoa(l.maxQuestion)+" bytes")
	}
	if !utf8.ValidString(q) {
		return "", newError(http.StatusBadRequest, CodeInvalidUTF8, "the question is not valid UTF-8")
	}
	return clean, nil
}

func checkSession(s string) error {
	if len(s) > maxSessionBytes {
		return newError(http.StatusBadRequest, CodeInvalidSession, "session_id is longer than 128 bytes")
	}
	return nil
}

// validTenant reports whether id is 1-64 characters of [A-Za-z0-9_.-].
func validTenant(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_' || c == '.' || c == '-':
		default:
			return false
		}
	}
	return true
}
