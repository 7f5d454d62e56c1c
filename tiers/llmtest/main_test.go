package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/clock"
	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// manualClock is the project's clock, moved only when told.
type manualClock = clock.Manual

func newManualClock() *manualClock {
	return clock.NewManual(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
}

// start returns a started server closed at the end of the test.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	srv := NewServer(cfg)
	t.Cleanup(srv.Close)
	return srv
}

// startBlocking returns a started server, closed at the end of the test,
// whose handlers report on blocked (of capacity n) when they start waiting
// with no time limit.
func startBlocking(t *testing.T, n int) (srv *Server, blocked chan struct{}) {
	t.Helper()
	srv = New(Config{})
	blocked = make(chan struct{}, n)
	srv.onBlock = func() { blocked <- struct{}{} }
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, blocked
}

// client returns a go-openai client for srv with its own transport.
func client(t *testing.T, srv *Server) *openai.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = srv.URL
	cfg.HTTPClient = &http.Client{Transport: tr}
	return openai.NewClientWithConfig(cfg)
}

func chatReq(model, question string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model: model,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "Answer from the documents.\nDocuments:\n[1] Returns policy\nItems can be returned within 30 days."},
			{Role: openai.ChatMessageRoleUser, Content: question},
		},
	}
}

// raw sends a request with the standard library client and returns the
// status, headers and body.
func raw(t *testing.T, method, url, body string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// root returns the server's address without the /v1 suffix.
func root(srv *Server) string { return strings.TrimSuffix(srv.URL, "/v1") }

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// errorCode returns the error.code of an OpenAI-style error body.
func errorCode(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e.Error.Code
}
