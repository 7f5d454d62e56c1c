package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// maxBody caps request bodies.
const maxBody = 4 << 20

// routes builds the request multiplexer.
func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/chat/completions", s.handleChat)
	m.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	m.HandleFunc("POST /v1/rerank", s.handleRerank)
	m.HandleFunc("GET /v1/models", s.handleModels)
	m.HandleFunc("GET /v1/models/{model...}", s.handleModel)
	m.HandleFunc("GET /_llmtest/faults", s.handleGetFaults)
	m.HandleFunc("PUT /_llmtest/faults/{model...}", s.handlePutFault)
	m.HandleFunc("DELETE /_llmtest/faults/{model...}", s.handleDeleteFault)
	m.HandleFunc("DELETE /_llmtest/faults", s.handleDeleteFaults)
	m.HandleFunc("PUT /_llmtest/schedule/{model...}", s.handlePutSchedule)
	m.HandleFunc("GET /_llmtest/stats", s.handleGetStats)
	m.HandleFunc("POST /_llmtest/stats/reset", s.handleResetStats)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			"unknown request URL: "+r.Method+" "+r.URL.Path)
	})
	s.mux = m
}

type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    any    `json:"code"`
}

// writeJSON writes v as a JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding failed","type":"server_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError writes an OpenAI-style error response.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]apiError{"error": {Message: msg, Type: typ, Code: c}})
}

// readJSON decodes the request body into v, answering 400 or 413 itself
// when it cannot. Reading the body to its end also lets the server notice
// a client that goes away.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "request body too large")
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_body", "cannot read request body")
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

// checkModel answers 400 for a missing model and 404 for one that is not
// served, and reports whether the request may go on.
func (s *Server) checkModel(w http.ResponseWriter, model string) bool {
	if model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "missing_model", "you must provide a model parameter")
		return false
	}
	if !s.knownModel(model) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
			fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model))
		return false
	}
	return true
}

// abort cuts the connection without finishing the response: a hijacked
// connection is closed (with an RST if rst and the connection is TCP);
// where hijacking is not supported, the handler panics with
// http.ErrAbortHandler, which net/http turns into a silent abort.
func abort(w http.ResponseWriter, rst bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && rst {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// writeStatusFault answers a ModeStatus fault.
func writeStatusFault(w http.ResponseWriter, f Fault) {
	status := f.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if f.Body != "" {
		writeBody(w, status, f.Body)
		return
	}
	typ, code, msg := "server_error", "server_error", "The server had an error while processing your request."
	switch {
	case status == http.StatusUnauthorized:
		typ, code, msg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
	case status == http.StatusForbidden:
		typ, code, msg = "invalid_request_error", "permission_denied", "You are not allowed to use this model."
	case status == http.StatusTooManyRequests:
		typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached."
	case status == http.StatusServiceUnavailable:
		code, msg = "service_unavailable", "The engine is currently overloaded, please try again later."
	case status >= 400 && status < 500:
		typ, code, msg = "invalid_request_error", "invalid_request", "The request was rejected."
	}
	writeError(w, status, typ, code, msg)
}

// writeRateLimit answers a ModeRateLimit fault.
func writeRateLimit(w http.ResponseWriter, f Fault) {
	secs := max(1, int(math.Ceil(f.RetryAfter.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	if f.Body != "" {
		writeBody(w, http.StatusTooManyRequests, f.Body)
		return
	}
	writeError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
		fmt.Sprintf("Rate limit reached. Please try again in %ds.", secs))
}

// breakAfterHeaders counts the prompt tokens of a request to model, sends
// a 200 with a JSON content type and closes the connection before any body
// (once breaks are not held, see HoldBreaks).
func (s *Server) breakAfterHeaders(w http.ResponseWriter, r *http.Request, model string, prompt int) {
	s.count(model, func(st *Stats) { st.PromptTokens += int64(prompt) })
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	s.holdBreak(r.Context())
	abort(w, false)
}

// writeBody writes a configured fault body, as JSON when it looks like it.
func writeBody(w http.ResponseWriter, status int, body string) {
	ct := "text/plain; charset=utf-8"
	if strings.HasPrefix(strings.TrimSpace(body), "{") {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// countCall counts a call to model with call (which adds to the counter of
// its kind), and as faulted if its fault is other than ok and latency. It
// returns the fault in force.
func (s *Server) countCall(model string, call func(*Stats)) Fault {
	f := s.Fault(model)
	s.count(model, func(st *Stats) {
		call(st)
		if f.Mode != ModeOK && f.Mode != ModeLatency {
			st.Faulted++
		}
	})
	return f
}

// plainFault serves the faults of a plain (not streamed) answer to model
// that common does not: a stall waits Delay before answering (or forever),
// a break cuts the answer after its headers, and malformed sends body. The
// prompt tokens count for the two that send a 200. It returns true when
// the request was answered.
func (s *Server) plainFault(w http.ResponseWriter, r *http.Request, f Fault, model string, prompt int, malformed string) bool {
	switch f.Mode {
	case ModeStall:
		if !s.wait(r.Context(), f.Delay) {
			abort(w, false)
			return true
		}
	case ModeBreak:
		s.breakAfterHeaders(w, r, model, prompt)
		return true
	case ModeMalformed:
		s.count(model, func(st *Stats) { st.PromptTokens += int64(prompt) })
		writeBody(w, http.StatusOK, malformed)
		return true
	}
	return false
}
