package tiers

import (
	"context"
	"errors"

	openai "github.com/sashabaranov/go-openai"
)

// ProbeTier is the Tier of the errors of probe requests.
const ProbeTier = "probe"

// probeText is what a probe request sends: one short word.
const probeText = "ping"

var errProbeEmpty = errors.New("probe: no choices in the completion")

// ProbeChat sends the smallest chat completion to model id (the provider's
// model name) through client: one user message of one word, answered with
// at most one token. It returns nil if the model answered, else an *Error
// whose Kind classifies the failure as for a question's call.
func ProbeChat(ctx context.Context, client *openai.Client, id, model string) error {
	if client == nil {
		return &Error{Kind: KindOther, Tier: ProbeTier, Model: id, Err: errNoClient}
	}
	cctx, note := withNote(ctx)
	res, err := client.CreateChatCompletion(cctx, openai.ChatCompletionRequest{
		Model:     model,
		Messages:  []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: probeText}},
		MaxTokens: 1,
	})
	if err != nil {
		return classifyCall(ProbeTier, id, err, ctx.Err(), note.retryAfter)
	}
	if len(res.Choices) == 0 {
		return &Error{Kind: KindEmpty, Tier: ProbeTier, Model: id, Err: errProbeEmpty}
	}
	return nil
}

// ProbeRerank sends the smallest rerank request: one word against one
// document. Its errors are those of RerankClient.Rerank.
func ProbeRerank(ctx context.Context, c *RerankClient) error {
	_, err := c.Rerank(ctx, probeText, []string{probeText})
	return err
}
