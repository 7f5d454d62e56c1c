package llmtest

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func TestChatPlainAnswer(t *testing.T) {
	srv := start(t, Config{})
	c := client(t, srv)
	resp, err := c.CreateChatCompletion(t.Context(), chatReq("qwen3-max", "How do I return an item?"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 {
		t.Fatalf("choices = %d, want 1", len(resp.Choices))
	}
	got := resp.Choices[0].Message.Content
	for _, want := range []string{"[qwen3-max] ", "Returns policy", "How do I return an item?"} {
		if !strings.Contains(got, want) {
			t.Errorf("answer %q lacks %q", got, want)
		}
	}
	if n := len(strings.Fields(got)); n < 10 || n > 40 {
		t.Errorf("answer has %d words, want 10..40: %q", n, got)
	}
	if resp.Choices[0].FinishReason != openai.FinishReasonStop {
		t.Errorf("finish_reason = %q", resp.Choices[0].FinishReason)
	}
	if resp.Model != "qwen3-max" || resp.Object != "chat.completion" || resp.ID == "" {
		t.Errorf("envelope = %q %q %q", resp.Model, resp.Object, resp.ID)
	}
	if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 ||
		resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage = %+v", resp.Usage)
	}
	again, err := c.CreateChatCompletion(t.Context(), chatReq("qwen3-max", "How do I return an item?"))
	if err != nil || again.Choices[0].Message.Content != got {
		t.Errorf("second answer = %q, %v; want the same %q", again.Choices[0].Message.Content, err, got)
	}
}

func TestChatStreamAnswer(t *testing.T) {
	srv := start(t, Config{})
	c := client(t, srv)
	req := chatReq("qwen-turbo", "How do I return an item?")
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	plain, err := c.CreateChatCompletion(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.CreateChatCompletionStream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var text strings.Builder
	var chunks int
	var usage *openai.Usage
	var finish openai.FinishReason
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Recv after %d chunks: %v", chunks, err)
		}
		if r.Object != "chat.completion.chunk" || r.Model != "qwen-turbo" {
			t.Errorf("chunk envelope = %q %q", r.Object, r.Model)
		}
		if r.Usage != nil {
			usage = r.Usage
			continue
		}
		chunks++
		text.WriteString(r.Choices[0].Delta.Content)
		finish = r.Choices[0].FinishReason
	}
	if chunks < 8 {
		t.Errorf("chunks = %d, want at least 8", chunks)
	}
	if text.String() != plain.Choices[0].Message.Content {
		t.Errorf("streamed %q, plain %q", text.String(), plain.Choices[0].Message.Content)
	}
	if finish != openai.FinishReasonStop {
		t.Errorf("last finish_reason = %q", finish)
	}
	if usage == nil || usage.CompletionTokens != chunks || usage.PromptTokens != plain.Usage.PromptTokens {
		t.Errorf("usage = %+v, want %d completion tokens", usage, chunks)
	}
}

func TestChatMaxTokens(t *testing.T) {
	srv := start(t, Config{})
	req := chatReq("m", "How do I return an item?")
	req.MaxTokens = 3
	resp, err := client(t, srv).CreateChatCompletion(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.CompletionTokens != 3 || resp.Choices[0].FinishReason != openai.FinishReasonLength {
		t.Errorf("usage %+v finish %q, want 3 tokens and length", resp.Usage, resp.Choices[0].FinishReason)
	}
}

func TestChatAnswerText(t *testing.T) {
	tests := []struct {
		name, system, user string
		want               []string
	}{
		{"no documents", "", "What is the refund window?", []string{"[m] ", "What is the refund window?"}},
		{"documents in user prompt", "", "Context:\n1. Shipping times\nbody\n\nQuestion: When will it arrive?",
			[]string{"Shipping times", "When will it arrive?"}},
		{"title label", "Documents:\n- Title: Warranty terms", "Is it covered?", []string{"Warranty terms", "Is it covered?"}},
		{"chinese", "参考资料：\n[1] 退货政策\n内容", "怎么退货？", []string{"[m] ", "退货政策", "怎么退货？"}},
		{"long question is cut", "", strings.Repeat("word ", 100), []string{"…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			texts := []string{tt.system, tt.user}
			got := answerText("m", tt.user, texts)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("answer %q lacks %q", got, w)
				}
			}
			if n := len(pieces(got)); n < 8 || n > 45 {
				t.Errorf("answer has %d tokens: %q", n, got)
			}
		})
	}
}

func TestPiecesRoundTrip(t *testing.T) {
	for _, s := range []string{"", " lead and  trail ", "中文 mixed 文本, ok", "a\nb\tc", "  ", "x"} {
		p := pieces(s)
		if strings.Join(p, "") != s {
			t.Errorf("pieces(%q) = %q does not join back", s, p)
		}
		for _, x := range p {
			if strings.TrimSpace(x) == "" && s != "" && strings.TrimSpace(s) != "" {
				t.Errorf("pieces(%q) has a blank piece %q", s, x)
			}
		}
	}
	if n := countTokens("你好 world"); n != 3 {
		t.Errorf("countTokens = %d, want 3", n)
	}
}

func TestChatContentParts(t *testing.T) {
	srv := start(t, Config{})
	body := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"Where is my parcel?"}]}]}`
	status, _, got := raw(t, http.MethodPost, srv.URL+"/chat/completions", body)
	if status != http.StatusOK || !strings.Contains(got, "Where is my parcel?") {
		t.Errorf("status %d body %s", status, got)
	}
}

func TestChatBadInput(t *testing.T) {
	srv := start(t, Config{Models: []string{"known"}})
	tests := []struct {
		name, body string
		status     int
		code       string
	}{
		{"malformed JSON", `{"model":`, 400, "invalid_json"},
		{"wrong type", `{"model": 3}`, 400, "invalid_json"},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "missing_model"},
		{"unknown model", `{"model":"other","messages":[{"role":"user","content":"hi"}]}`, 404, "model_not_found"},
		{"no messages", `{"model":"known","messages":[]}`, 400, "invalid_value"},
		{"too large", `{"model":"known","messages":[{"role":"user","content":"` + strings.Repeat("x", maxBody) + `"}]}`, 413, "request_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := raw(t, http.MethodPost, srv.URL+"/chat/completions", tt.body)
			if status != tt.status || errorCode(t, body) != tt.code {
				t.Errorf("got %d %s, want %d %s", status, body, tt.status, tt.code)
			}
		})
	}
	_, err := client(t, srv).CreateChatCompletion(t.Context(), chatReq("other", "hi"))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Errorf("unknown model error = %v", err)
	}
	if s := srv.Stats("other"); s != (Stats{}) {
		t.Errorf("rejected requests were counted: %+v", s)
	}
	status, _, body := raw(t, http.MethodGet, root(srv)+"/nowhere", "")
	if status != 404 || errorCode(t, body) != "unknown_url" {
		t.Errorf("unknown path: %d %s", status, body)
	}
}
