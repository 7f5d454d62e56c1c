package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/pipeline"
)

// TestErrorResponses sends every kind of bad request and checks the
// status, the code, the JSON shape and that no model was called.
func TestErrorResponses(t *testing.T) {
	h := newHarness(t, harnessOptions{api: func(c *Config) { c.Keys = map[string]string{"sk-acme": "acme"} }})
	auth := []string{"Authorization", "Bearer sk-acme"}
	long := strings.Repeat("q", 201)
	tests := []struct {
		name         string
		method, path string
		body         string
		headers      []string
		status       int
		code         string
	}{
		{"no key", "POST", "/v1/ask", `{"question":"hi"}`, nil, 401, CodeUnauthorized},
		{"unknown key", "POST", "/v1/ask", `{"question":"hi"}`, []string{"Authorization", "Bearer sk-nope"}, 401, CodeUnauthorized},
		{"basic auth", "POST", "/v1/ask", `{"question":"hi"}`, []string{"Authorization", "Basic c2stYWNtZTo="}, 401, CodeUnauthorized},
		{"no key on status", "GET", "/v1/status", "", nil, 401, CodeUnauthorized},
		{"tenant mismatch", "POST", "/v1/ask", `{"tenant_id":"beta","question":"hi"}`, auth, 403, CodeTenantMismatch},
		{"form body", "POST", "/v1/ask", `question=hi`, append([]string{"Content-Type", "application/x-www-form-urlencoded"}, auth...), 415, CodeUnsupportedMedia},
		{"no content type", "POST", "/v1/ask", `{"question":"hi"}`, append([]string{"Content-Type", ""}, auth...), 415, CodeUnsupportedMedia},
		{"bad json", "POST", "/v1/ask", `{"question":`, auth, 400, CodeBadJSON},
		{"unknown field", "POST", "/v1/ask", `{"questoin":"hi"}`, auth, 400, CodeUnknownField},
		{"empty question", "POST", "/v1/ask", `{"question":""}`, auth, 400, CodeEmptyQuestion},
		{"invalid utf8", "POST", "/v1/ask", "{\"question\":\"caf\xe9\"}", auth, 400, CodeInvalidUTF8},
		{"question too long", "POST", "/v1/ask", `{"question":"` + long + `"}`, auth, 413, CodeQuestionTooLong},
		{"body too large", "POST", "/v1/ask", `{"question":"hi","session_id":"` + strings.Repeat("s", 3000) + `"}`, auth, 413, CodeBodyTooLarge},
		{"invalid tenant", "POST", "/v1/ask", `{"tenant_id":"../etc","question":"hi"}`, auth, 400, CodeInvalidTenant},
		{"chat stream empty", "POST", "/v1/chat/completions", `{"stream":true,"messages":[]}`, auth, 400, CodeEmptyQuestion},
		{"ask stream no key", "POST", "/v1/ask/stream", `{"question":"hi"}`, nil, 401, CodeUnauthorized},
		{"ask stream unknown field", "POST", "/v1/ask/stream", `{"questoin":"hi"}`, auth, 400, CodeUnknownField},
		{"chat empty", "POST", "/v1/chat/completions", `{"messages":[]}`, auth, 400, CodeEmptyQuestion},
		{"chat tenant mismatch", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, append([]string{HeaderTenant, "beta"}, auth...), 403, CodeTenantMismatch},
		{"unknown route", "GET", "/v2/nothing", "", nil, 404, CodeNotFound},
		{"unknown route under v1", "GET", "/v1/nothing", "", auth, 404, CodeNotFound},
		{"wrong method", "GET", "/v1/ask", "", auth, 405, CodeMethodNotAllowed},
		{"wrong method healthz", "POST", "/healthz", "", nil, 405, CodeMethodNotAllowed},
		{"demo routes off", "PUT", "/v1/demo/faults/test-primary", `{"mode":"hang"}`, auth, 404, CodeNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.up.ResetStats()
			w := h.do(tc.method, tc.path, tc.body, tc.headers...)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if b := decodeError(t, w); b.Error.Code != tc.code {
				t.Fatalf("code %q, want %q", b.Error.Code, tc.code)
			}
			if n := h.upstreamCalls(); n != 0 {
				t.Fatalf("a refused request made %d upstream calls", n)
			}
		})
	}
}

func TestRateLimitedRequest(t *testing.T) {
	h := newHarness(t, harnessOptions{config: func(c *config.Config) {
		c.RateLimit = config.RateLimit{TenantRPS: 0.001, TenantBurst: 1, OnLimit: "reject"}
	}})
	h.ask("How do I return an item?")
	h.up.ResetStats()
	w := h.do(http.MethodPost, "/v1/ask", `{"question":"How long do refunds take?"}`)
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if b := decodeError(t, w); b.Error.Code != CodeRateLimited {
		t.Fatalf("code %s", b.Error.Code)
	}
	if w.Header().Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if n := h.upstreamCalls(); n != 0 {
		t.Fatalf("a rejected question made %d upstream calls", n)
	}
	// Another tenant has its own quota.
	if w := h.do(http.MethodPost, "/v1/ask", `{"tenant_id":"beta","question":"How long do refunds take?"}`); w.Code != http.StatusOK {
		t.Fatalf("tenant beta: %d %s", w.Code, w.Body)
	}
}

func TestPanicRecovered(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.srv.e.GET("/boom", func(echo.Context) error { panic("kaboom") })
	w := h.do(http.MethodGet, "/boom", "", HeaderRequestID, "trace-42")
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d", w.Code)
	}
	b := decodeError(t, w)
	if b.Error.Code != CodeInternal || b.Error.RequestID != "trace-42" {
		t.Fatalf("body %+v", b)
	}
	if strings.Contains(w.Body.String(), "kaboom") || strings.Contains(w.Body.String(), "goroutine") {
		t.Fatalf("the response leaks the panic: %s", w.Body)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "kaboom") || !strings.Contains(logs, "trace-42") {
		t.Fatalf("the panic is not logged with its request id: %s", logs)
	}
	// The server keeps serving.
	if w := h.do(http.MethodGet, "/healthz", ""); w.Code != http.StatusOK {
		t.Fatalf("healthz after panic: %d", w.Code)
	}
}

func TestErrorStatus(t *testing.T) {
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{pipeline.ErrRejected, 429, CodeRateLimited},
		{fmt.Errorf("wrapped: %w", pipeline.ErrExhausted), 503, CodeExhausted},
		{pipeline.ErrClosed, 503, CodeUnavailable},
		{context.Canceled, 499, CodeClientClosed},
		{context.DeadlineExceeded, 504, CodeTimeout},
		{echo.ErrNotFound, 404, CodeNotFound},
		{echo.ErrMethodNotAllowed, 405, CodeMethodNotAllowed},
		{echo.ErrStatusRequestEntityTooLarge, 413, CodeBodyTooLarge},
		{errors.New("surprise"), 500, CodeInternal},
		{newError(418, "teapot", "short and stout"), 418, "teapot"},
	}
	for _, tc := range tests {
		got := errorStatus(tc.err)
		if got.Status != tc.status || got.Code != tc.code {
			t.Errorf("errorStatus(%v) = %d %s, want %d %s", tc.err, got.Status, got.Code, tc.status, tc.code)
		}
	}
}
