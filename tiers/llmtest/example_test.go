package llmtest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

func Example() {
	srv := llmtest.NewServer(llmtest.Config{})
	defer srv.Close()

	cfg := openai.DefaultConfig("")
	cfg.BaseURL = srv.URL
	c := openai.NewClientWithConfig(cfg)
	req := openai.ChatCompletionRequest{
		Model:    "qwen3-max",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "How do I reset my password?"}},
	}

	resp, err := c.CreateChatCompletion(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Choices[0].Message.Content)

	srv.SetFault("qwen3-max", llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: 2 * time.Second})
	_, err = c.CreateChatCompletion(context.Background(), req)
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.HTTPStatusCode, apiErr.Code)
	}
	fmt.Println(srv.Stats("qwen3-max").Calls)
	// Output:
	// [qwen3-max] This is a simulated answer to your question: How do I reset my password?
	// 429 rate_limit_exceeded
	// 2
}
