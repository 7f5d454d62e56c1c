package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// short is how long a client waits for something that must not come.
const short = 80 * time.Millisecond

func asAPIError(t *testing.T, err error) *openai.APIError {
	t.Helper()
	var e *openai.APIError
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *openai.APIError", err, err)
	}
	return e
}

// isTransportError reports whether err is a failure below HTTP: no status
// was received.
func isTransportError(err error) bool {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	return err != nil && !errors.As(err, &apiErr) && !errors.As(err, &reqErr)
}

func TestPlainFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		check func(t *testing.T, resp openai.ChatCompletionResponse, err error, took time.Duration)
	}{
		{"latency", Fault{Mode: ModeLatency, Delay: 30 * time.Millisecond}, func(t *testing.T, resp openai.ChatCompletionResponse, err error, took time.Duration) {
			if err != nil || len(resp.Choices) != 1 || took < 30*time.Millisecond {
				t.Errorf("err %v, %d choices after %v; want an answer after 30ms", err, len(resp.Choices), took)
			}
		}},
		{"status 503", Fault{Mode: ModeStatus, Status: 503}, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			if e := asAPIError(t, err); e.HTTPStatusCode != 503 || e.Code != "service_unavailable" {
				t.Errorf("got %d %v", e.HTTPStatusCode, e.Code)
			}
		}},
		{"status default", Fault{Mode: ModeStatus}, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			if e := asAPIError(t, err); e.HTTPStatusCode != 500 || e.Type != "server_error" {
				t.Errorf("got %d %q", e.HTTPStatusCode, e.Type)
			}
		}},
		{"status 401", Fault{Mode: ModeStatus, Status: 401}, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			if e := asAPIError(t, err); e.HTTPStatusCode != 401 || e.Code != "invalid_api_key" {
				t.Errorf("got %d %v", e.HTTPStatusCode, e.Code)
			}
		}},
		{"status 403", Fault{Mode: ModeStatus, Status: 403}, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			if e := asAPIError(t, err); e.HTTPStatusCode != 403 {
				t.Errorf("got %d", e.HTTPStatusCode)
			}
		}},
		{"status 400 with body", Fault{Mode: ModeStatus, Status: 400,
			Body: `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`},
			func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
				if e := asAPIError(t, err); e.HTTPStatusCode != 400 || e.Code != "context_length_exceeded" || e.Message != "too long" {
					t.Errorf("got %d %v %q", e.HTTPStatusCode, e.Code, e.Message)
				}
			}},
		{"status with text body", Fault{Mode: ModeStatus, Status: 502, Body: "bad gateway"},
			func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
				var e *openai.RequestError
				if !errors.As(err, &e) || e.HTTPStatusCode != 502 || string(e.Body) != "bad gateway" {
					t.Errorf("got %v", err)
				}
			}},
		{"rate limit", Fault{Mode: ModeRateLimit, RetryAfter: 1500 * time.Millisecond}, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			if e := asAPIError(t, err); e.HTTPStatusCode != 429 || e.Code != "rate_limit_exceeded" {
				t.Errorf("got %d %v", e.HTTPStatusCode, e.Code)
			}
		}},
		{"reset", Fault{Mode: ModeReset}, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			if !isTransportError(err) || !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("got %v (%T), want a connection reset", err, err)
			}
		}},
		{"break", Fault{Mode: ModeBreak}, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("got %v, want unexpected EOF", err)
			}
		}},
		{"stall with delay", Fault{Mode: ModeStall, Delay: 30 * time.Millisecond}, func(t *testing.T, resp openai.ChatCompletionResponse, err error, took time.Duration) {
			if err != nil || len(resp.Choices) != 1 || took < 30*time.Millisecond {
				t.Errorf("err %v, %d choices after %v", err, len(resp.Choices), took)
			}
		}},
		{"stall forever", Fault{Mode: ModeStall}, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want deadline exceeded", err)
			}
		}},
		{"hang", Fault{Mode: ModeHang}, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want deadline exceeded", err)
			}
		}},
		{"malformed", Fault{Mode: ModeMalformed}, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			var se *json.SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("got %v (%T), want a JSON syntax error", err, err)
			}
		}},
		{"empty", Fault{Mode: ModeEmpty}, func(t *testing.T, resp openai.ChatCompletionResponse, err error, _ time.Duration) {
			if err != nil || len(resp.Choices) != 0 || resp.Usage.PromptTokens == 0 {
				t.Errorf("err %v, %d choices, usage %+v; want no choices", err, len(resp.Choices), resp.Usage)
			}
		}},
	}
	srv := start(t, Config{})
	c := client(t, srv)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.SetFault("m", tt.fault)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			if tt.fault.Mode == ModeHang || tt.fault.Mode == ModeStall && tt.fault.Delay == 0 {
				ctx, cancel = context.WithTimeout(t.Context(), short)
			}
			defer cancel()
			begin := time.Now()
			resp, err := c.CreateChatCompletion(ctx, chatReq("m", "Where is my parcel?"))
			tt.check(t, resp, err, time.Since(begin))
			// Other models are untouched.
			if _, err := c.CreateChatCompletion(t.Context(), chatReq("other", "hi")); err != nil {
				t.Errorf("other model: %v", err)
			}
		})
	}
}

func TestRateLimitRetryAfterHeader(t *testing.T) {
	srv := start(t, Config{})
	for _, tt := range []struct {
		after time.Duration
		want  string
	}{{0, "1"}, {200 * time.Millisecond, "1"}, {1500 * time.Millisecond, "2"}, {7 * time.Second, "7"}} {
		srv.SetFault("m", Fault{Mode: ModeRateLimit, RetryAfter: tt.after})
		status, h, body := raw(t, http.MethodPost, srv.URL+"/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		if status != 429 || h.Get("Retry-After") != tt.want || errorCode(t, body) != "rate_limit_exceeded" {
			t.Errorf("retry_after %v: got %d Retry-After %q body %s, want %s", tt.after, status, h.Get("Retry-After"), body, tt.want)
		}
	}
}

// recvAll reads a stream to its end and returns the chunks with content
// and the error that ended it (nil for io.EOF).
func recvAll(st *openai.ChatCompletionStream) (chunks []openai.ChatCompletionStreamResponse, err error) {
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return chunks, nil
		}
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, r)
	}
}

func TestStreamFaults(t *testing.T) {
	tests := []struct {
		name      string
		fault     Fault
		openErr   func(error) bool // nil: the stream opens
		chunks    int              // -1: the whole answer
		endErr    func(error) bool // nil: ends with io.EOF
		shortWait bool
	}{
		{name: "ok", fault: Fault{}, chunks: -1},
		{name: "latency", fault: Fault{Mode: ModeLatency, Delay: 20 * time.Millisecond}, chunks: -1},
		{name: "status", fault: Fault{Mode: ModeStatus, Status: 500}, openErr: func(err error) bool {
			var e *openai.APIError
			return errors.As(err, &e) && e.HTTPStatusCode == 500
		}},
		{name: "rate limit", fault: Fault{Mode: ModeRateLimit, RetryAfter: time.Second}, openErr: func(err error) bool {
			var e *openai.APIError
			return errors.As(err, &e) && e.HTTPStatusCode == 429
		}},
		{name: "reset", fault: Fault{Mode: ModeReset}, openErr: func(err error) bool {
			return isTransportError(err) && errors.Is(err, syscall.ECONNRESET)
		}},
		{name: "hang", fault: Fault{Mode: ModeHang}, shortWait: true, openErr: func(err error) bool {
			return errors.Is(err, context.DeadlineExceeded)
		}},
		{name: "break after 3", fault: Fault{Mode: ModeBreak, After: 3}, chunks: 3, endErr: func(err error) bool {
			return errors.Is(err, io.ErrUnexpectedEOF)
		}},
		{name: "break after 0", fault: Fault{Mode: ModeBreak}, chunks: 0, endErr: func(err error) bool {
			return errors.Is(err, io.ErrUnexpectedEOF)
		}},
		{name: "break past the end", fault: Fault{Mode: ModeBreak, After: 1000}, chunks: -1, endErr: func(err error) bool {
			return errors.Is(err, io.ErrUnexpectedEOF)
		}},
		{name: "stall after 2", fault: Fault{Mode: ModeStall, After: 2}, chunks: 2, shortWait: true, endErr: func(err error) bool {
			return errors.Is(err, context.Canceled)
		}},
		{name: "slow stall", fault: Fault{Mode: ModeStall, After: 2, Delay: 2 * time.Millisecond}, chunks: -1},
		{name: "malformed after 4", fault: Fault{Mode: ModeMalformed, After: 4}, chunks: 4, endErr: func(err error) bool {
			var se *json.SyntaxError
			return errors.As(err, &se)
		}},
		{name: "empty", fault: Fault{Mode: ModeEmpty}, chunks: 1},
	}
	srv := start(t, Config{})
	c := client(t, srv)
	full := len(pieces(answerText("m", "Where is my parcel?", nil)))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.SetFault("m", tt.fault)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if tt.shortWait && tt.openErr != nil {
				ctx, cancel = context.WithTimeout(t.Context(), short)
				defer cancel()
			}
			req := openai.ChatCompletionRequest{Model: "m", Stream: true,
				Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "Where is my parcel?"}}}
			st, err := c.CreateChatCompletionStream(ctx, req)
			if tt.openErr != nil {
				if !tt.openErr(err) {
					t.Fatalf("open: got %v (%T)", err, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer st.Close()
			var chunks []openai.ChatCompletionStreamResponse
			if tt.shortWait { // read the good chunks, then give the rest a short deadline
				for len(chunks) < tt.chunks {
					r, err := st.Recv()
					if err != nil {
						t.Fatalf("chunk %d: %v", len(chunks), err)
					}
					chunks = append(chunks, r)
				}
				stop := time.AfterFunc(short, cancel)
				defer stop.Stop()
			}
			more, err := recvAll(st)
			chunks = append(chunks, more...)
			want := tt.chunks
			if want < 0 {
				want = full
			}
			if len(chunks) != want {
				t.Errorf("got %d chunks, want %d", len(chunks), want)
			}
			if tt.endErr == nil && err != nil || tt.endErr != nil && !tt.endErr(err) {
				t.Errorf("stream ended with %v (%T)", err, err)
			}
			if tt.fault.Mode == ModeEmpty && len(chunks) == 1 && len(chunks[0].Choices) != 0 {
				t.Errorf("empty stream chunk has %d choices", len(chunks[0].Choices))
			}
		})
	}
}

func TestStreamChunkDelay(t *testing.T) {
	srv := start(t, Config{ChunkDelay: 3 * time.Millisecond})
	c := client(t, srv)
	req := openai.ChatCompletionRequest{Model: "m", Stream: true,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}
	begin := time.Now()
	st, err := c.CreateChatCompletionStream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	chunks, err := recvAll(st)
	if err != nil {
		t.Fatal(err)
	}
	if min := time.Duration(len(chunks)-1) * 3 * time.Millisecond; time.Since(begin) < min {
		t.Errorf("%d chunks took %v, want at least %v", len(chunks), time.Since(begin), min)
	}
	if !strings.HasPrefix(chunks[0].Choices[0].Delta.Content, "[m]") || chunks[0].Choices[0].Delta.Role != "assistant" {
		t.Errorf("first chunk = %+v", chunks[0].Choices[0].Delta)
	}
}
