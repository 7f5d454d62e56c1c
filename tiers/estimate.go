package tiers

import (
	"unicode"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// EstimateTokens estimates the tokens a model's tokenizer makes of s,
// without the tokenizer: one per Han, kana or Hangul rune (Chinese and
// Japanese BPE vocabularies hold about one such character per token), and
// one per four bytes of everything else (the usual rate of English and
// code under the BPE tokenizers of OpenAI-compatible models), rounded up.
// It is the estimator of the prompt tokens of a call whose provider
// reported no usage; docs/performance.md has its measured error.
func EstimateTokens(s string) int {
	cjk, other := 0, 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			other++
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			cjk++
		} else {
			other += n
		}
	}
	return cjk + (other+3)/4
}

// Per-message and per-request overheads of the chat format (role and
// separators, and the priming of the reply), as OpenAI documents them.
const (
	tokensPerMessage = 4
	tokensPerRequest = 3
)

// estimatePrompt estimates the prompt tokens of a chat request of msgs.
func estimatePrompt(msgs []openai.ChatCompletionMessage) int {
	n := tokensPerRequest
	for _, m := range msgs {
		n += tokensPerMessage + EstimateTokens(m.Content)
	}
	return n
}

// billed reports whether a call that failed with kind k had its prompt
// read by the model, so that its prompt tokens are spent though no usage
// came back: it timed out, lost its connection, was cancelled or broke
// off mid-answer, or answered something unreadable. Refusals (429, 4xx,
// 5xx) are not billed.
func billed(k Kind) bool {
	switch k {
	case KindTimeout, KindConnection, KindCanceled, KindInterrupted, KindMalformed:
		return true
	}
	return false
}

// estimateSpent fills e's prompt tokens, when the provider reported none
// and its failure was billed, with the estimate of msgs.
func estimateSpent(e *Error, msgs []openai.ChatCompletionMessage) *Error {
	if e != nil && e.Usage.PromptTokens == 0 && billed(e.Kind) {
		e.Usage.PromptTokens = estimatePrompt(msgs)
	}
	return e
}
