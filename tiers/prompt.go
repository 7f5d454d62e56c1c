package tiers

import (
	"strconv"
	"strings"
	"unicode"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragfuse/ragfuse/retrieval"
)

// DefaultSystemPrompt is the system prompt of an LLM tier: answer only from
// the numbered documents, say so when they do not hold the answer, and
// answer in the question's language.
const DefaultSystemPrompt = `You are a customer-service assistant. Answer the user's question using only the numbered documents in the user's message.
If the documents do not contain the answer, say plainly that the knowledge base does not cover it; do not guess and do not use outside knowledge.
Answer in the same language as the question (answer a Chinese question in Chinese, an English question in English).
Be concise, and cite the documents you used by their numbers, like [1].`

// maxDocRunes caps the text of one document in a prompt.
const maxDocRunes = 2000

// DetectLanguage returns "zh" when s contains Han characters and "en"
// otherwise.
func DetectLanguage(s string) string {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return "zh"
		}
	}
	return "en"
}

// buildMessages returns the RAG prompt: the system prompt, the earlier
// turns of the conversation (history, as historyMessages gives them), then
// one user message with the numbered documents and the question.
func buildMessages(system, question string, history []openai.ChatCompletionMessage, docs []retrieval.Doc) []openai.ChatCompletionMessage {
	question = strings.TrimSpace(question)
	size := len("Documents:\n") + len("Question: ") + len(question)
	for _, d := range docs {
		size += len(d.Title) + min(len(d.Text), 4*maxDocRunes) + 16
	}
	var b strings.Builder
	b.Grow(size)
	if len(docs) == 0 {
		b.WriteString("No documents were found for this question.\n\n")
	} else {
		b.WriteString("Documents:\n")
		for i, d := range docs {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(i + 1))
			b.WriteString("] ")
			writeOneLine(&b, d.Title)
			b.WriteByte('\n')
			if t := clip(strings.TrimSpace(d.Text), maxDocRunes); t != "" {
				b.WriteString(t)
				b.WriteByte('\n')
			}
			b.WriteByte('\n')
		}
	}
	b.WriteString("Question: ")
	b.WriteString(question)
	msgs := make([]openai.ChatCompletionMessage, 0, len(history)+2)
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: system})
	msgs = append(msgs, history...)
	return append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: b.String()})
}

// writeOneLine writes s to b with its runs of white space (line breaks
// included) turned into single spaces and its ends trimmed.
func writeOneLine(b *strings.Builder, s string) {
	space, started := false, false
	start := 0 // of the run of non-space text not yet written
	for i, r := range s {
		if !unicode.IsSpace(r) {
			if space {
				if started {
					b.WriteByte(' ')
				}
				start, space = i, false
			}
			started = true
			continue
		}
		if !space && started {
			b.WriteString(s[start:i])
		}
		space = true
	}
	if !space && started {
		b.WriteString(s[start:])
	}
}

// oneLine returns s as writeOneLine writes it.
func oneLine(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	writeOneLine(&b, s)
	return b.String()
}

// clip returns s cut to at most n runes, marking a cut with "…".
func clip(s string, n int) string {
	if len(s) <= n { // no more bytes than n, so no more runes
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return strings.TrimSpace(s[:j]) + "…"
		}
		i++
	}
	return s
}
