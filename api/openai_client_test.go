package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// openaiServer serves h over HTTP and returns a go-openai client for it.
func openaiServer(t *testing.T, h *harness, key string) (*openai.Client, *httptest.Server) {
	t.Helper()
	ts := httptest.NewServer(h.srv.Handler())
	t.Cleanup(ts.Close)
	if key == "" {
		return chatClient(ts), ts
	}
	return keyClient(ts, key), ts
}

func userMsg(s string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: s}
}

// readStream reads a go-openai stream to its end: the content, the finish
// reason, the usage chunk and the responses.
func readStream(t *testing.T, st *openai.ChatCompletionStream) (string, openai.FinishReason, *openai.Usage, []openai.ChatCompletionStreamResponse, error) {
	t.Helper()
	defer st.Close()
	var (
		b      strings.Builder
		finish openai.FinishReason
		usage  *openai.Usage
		all    []openai.ChatCompletionStreamResponse
	)
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), finish, usage, all, nil
		}
		if err != nil {
			return b.String(), finish, usage, all, err
		}
		all = append(all, r)
		if r.Usage != nil {
			usage = r.Usage
		}
		if len(r.Choices) > 0 {
			b.WriteString(r.Choices[0].Delta.Content)
			if r.Choices[0].FinishReason != "" {
				finish = r.Choices[0].FinishReason
			}
		}
	}
}

func TestOpenAIClientChatCompletionFields(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	client, _ := openaiServer(t, h, "")
	before := time.Now().Unix()
	resp, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessage{userMsg("How do I return an item?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Object != "chat.completion" || resp.Created < before ||
		resp.Model != modelPrimary {
		t.Fatalf("response %+v", resp)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Index != 0 || resp.Choices[0].FinishReason != openai.FinishReasonStop ||
		!strings.Contains(resp.Choices[0].Message.Content, "How do I return an item?") {
		t.Fatalf("choices %+v", resp.Choices)
	}
	u := resp.Usage
	if u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("usage %+v", u)
	}

	// No model answers: the requested model is echoed.
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
	h.up.SetFault(modelFallback, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
	resp, err = client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessage{userMsg("How long do refunds take?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "gpt-4o" || resp.Header().Get(HeaderSource) != "retrieval" || len(resp.Choices) != 1 ||
		resp.Choices[0].Message.Content == "" {
		t.Fatalf("retrieval answer %+v header %q", resp, resp.Header().Get(HeaderSource))
	}
}

func TestOpenAIClientChatStream(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		_, ts := streamHarness(t, nil, time.Hour)
		client := chatClient(ts)
		req := openai.ChatCompletionRequest{Model: "gpt-4o", Stream: true,
			Messages: []openai.ChatCompletionMessage{userMsg("How do I return an item?")}}
		if includeUsage {
			req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
		}
		st, err := client.CreateChatCompletionStream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if st.Header().Get(HeaderSource) != "primary" {
			t.Errorf("source header %q", st.Header().Get(HeaderSource))
		}
		text, finish, usage, all, err := readStream(t, st)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, "How do I return an item?") || finish != openai.FinishReasonStop {
			t.Fatalf("content %q finish %q", text, finish)
		}
		if (usage != nil) != includeUsage || (usage != nil && (usage.CompletionTokens == 0 ||
			usage.TotalTokens != usage.PromptTokens+usage.CompletionTokens)) {
			t.Fatalf("include_usage=%v: usage %+v", includeUsage, usage)
		}
		if len(all) < 3 || len(all[0].Choices) != 1 || all[0].Choices[0].Delta.Role != openai.ChatMessageRoleAssistant {
			t.Fatalf("chunks %+v", all)
		}
		for _, c := range all {
			if c.ID != all[0].ID || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Object != "chat.completion.chunk" ||
				c.Created == 0 || c.Model != modelPrimary {
				t.Fatalf("chunk %+v", c)
			}
		}
	}
}

// apiError asserts err is an *openai.APIError with status and code.
func apiError(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	var ae *openai.APIError
	if !errors.As(err, &ae) {
		t.Errorf("%s: error %v (%T), want *openai.APIError", what, err, err)
		return
	}
	if ae.HTTPStatusCode != status || ae.Code != code || ae.Message == "" || ae.Type == "" {
		t.Errorf("%s: APIError %+v, want %d %s", what, ae, status, code)
	}
}

func TestOpenAIClientErrors(t *testing.T) {
	ctx := context.Background()
	req := openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{userMsg("How do I return an item?")}}
	for _, stream := range []bool{false, true} {
		call := func(c *openai.Client, r openai.ChatCompletionRequest) error {
			if !stream {
				_, err := c.CreateChatCompletion(ctx, r)
				return err
			}
			st, err := c.CreateChatCompletionStream(ctx, r)
			if err != nil {
				return err
			}
			_, _, _, _, err = readStream(t, st)
			return err
		}
		// 401, 403, 400.
		h := newHarness(t, harnessOptions{api: func(c *Config) { c.Keys = map[string]string{"sk-acme": "acme"} }})
		good, ts := openaiServer(t, h, "sk-acme")
		apiError(t, "401", call(keyClient(ts, "sk-wrong"), req), 401, CodeUnauthorized)
		empty := req
		empty.Messages = []openai.ChatCompletionMessage{userMsg("  ")}
		apiError(t, "400", call(good, empty), 400, CodeEmptyQuestion)
		long := req
		long.Messages = []openai.ChatCompletionMessage{userMsg(strings.Repeat("a", 300))}
		apiError(t, "413", call(good, long), 413, CodeQuestionTooLong)
		if h.upstreamCalls() != 0 {
			t.Fatalf("stream=%v: refused requests reached the model", stream)
		}

		// 429.
		h = newHarness(t, harnessOptions{config: func(c *config.Config) {
			c.RateLimit = config.RateLimit{TenantRPS: 0.001, TenantBurst: 1, OnLimit: "reject"}
		}})
		client, _ := openaiServer(t, h, "")
		if err := call(client, req); err != nil {
			t.Fatal(err)
		}
		apiError(t, "429", call(client, req), 429, CodeRateLimited)

		// 503: no tier answers and there is no static tier.
		h = newHarness(t, harnessOptions{config: func(c *config.Config) {
			c.Tiers = c.Tiers[1:3]
		}})
		h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
		h.up.SetFault(modelFallback, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
		client, _ = openaiServer(t, h, "")
		apiError(t, "503", call(client, req), 503, CodeExhausted)
	}
}

// TestOpenAIClientStreamErrorAfterPing: a streamed question that fails
// after heartbeats went out still reaches go-openai as an API error.
func TestOpenAIClientStreamErrorAfterPing(t *testing.T) {
	h := newHarness(t, harnessOptions{
		config: func(c *config.Config) { c.Tiers = c.Tiers[1:3] },
		api:    func(c *Config) { c.StreamHeartbeat = 20 * time.Millisecond },
		upstream: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(150 * time.Millisecond) // long enough for heartbeats
				next.ServeHTTP(w, r)
			})
		},
	})
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
	h.up.SetFault(modelFallback, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
	client, _ := openaiServer(t, h, "")
	st, err := client.CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{Model: "m",
		Messages: []openai.ChatCompletionMessage{userMsg("How do I return an item?")}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, _, err = readStream(t, st)
	var ae *openai.APIError
	if !errors.As(err, &ae) || ae.Code != CodeExhausted {
		t.Fatalf("error %v (%T), want an APIError %s", err, err, CodeExhausted)
	}
}

func TestOpenAIClientRequestMapping(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	client, ts := openaiServer(t, h, "")
	ctx := context.Background()

	// System and assistant messages around: the last user message is
	// the question.
	resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m",
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "Be brief."},
			userMsg("first question about shipping"),
			{Role: openai.ChatMessageRoleAssistant, Content: "an answer"},
			userMsg("How long do refunds take?"),
			{Role: openai.ChatMessageRoleSystem, Content: "trailing system"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Choices[0].Message.Content; !strings.Contains(c, "How long do refunds take?") {
		t.Fatalf("content %q", c)
	}

	// Multi-part content: the text parts.
	resp, err = client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{
			{Type: openai.ChatMessagePartTypeText, Text: "How do I "},
			{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "https://example.com/x.png"}},
			{Type: openai.ChatMessagePartTypeText, Text: "return an item?"},
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Choices[0].Message.Content; !strings.Contains(c, "How do I return an item?") {
		t.Fatalf("multi-part content %q", c)
	}

	calls := h.upstreamCalls()
	// No user message, or an empty one: 400 and no model call.
	for _, msgs := range [][]openai.ChatCompletionMessage{
		{{Role: openai.ChatMessageRoleSystem, Content: "You are helpful."}},
		{userMsg("")},
		{{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{
			{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "https://example.com/x.png"}}}}},
	} {
		_, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", Messages: msgs})
		apiError(t, "no question", err, 400, CodeEmptyQuestion)
	}
	if h.upstreamCalls() != calls {
		t.Fatal("an invalid request reached the model")
	}

	// Unknown fields and raw shapes.
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{"model":"m","temperature":0.2,"tools":[],"foo":{"bar":1},"messages":[{"role":"user","content":"How do I return an item?","name":"x"}]}`, 200},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"How do I return an item?"}]}],"stream_options":null}`, 200},
		{`{"messages":[{"role":"user","content":null}]}`, 400},
		{`{"messages":[{"role":"user","content":42}]}`, 400},
		{`{"messages":[{"role":"user","content":"ok"}],"user":"` + strings.Repeat("u", 129) + `"}`, 400},
		{`{"messages":"hi"}`, 400},
		{`[]`, 400},
		{`null`, 400},
	} {
		w := h.do(http.MethodPost, "/v1/chat/completions", tc.body)
		if w.Code != tc.status {
			t.Errorf("%s: %d %s", tc.body, w.Code, w.Body)
		}
	}

	// Tenant header.
	r, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"messages":[{"role":"user","content":"How do I return an item?"}]}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderTenant, "bad tenant!")
	res, err := ts.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Fatalf("bad tenant header: %d", res.StatusCode)
	}
}

func TestOpenAIClientBodyTooLarge(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	client, _ := openaiServer(t, h, "")
	for _, stream := range []bool{false, true} {
		req := openai.ChatCompletionRequest{Model: "m", Stream: stream, Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: strings.Repeat("s", 5000)}, userMsg("How do I return an item?")}}
		var err error
		if stream {
			_, err = client.CreateChatCompletionStream(context.Background(), req)
		} else {
			_, err = client.CreateChatCompletion(context.Background(), req)
		}
		apiError(t, "body too large", err, 413, CodeBodyTooLarge)
	}
}
