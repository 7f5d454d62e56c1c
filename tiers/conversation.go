package tiers

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragfuse/ragfuse/retrieval"
)

// The roles of a Turn.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Turn is one earlier message of a conversation: what the user asked or
// what the assistant answered.
type Turn struct {
	Role    string // RoleUser or RoleAssistant
	Content string
}

// DefaultHistoryTurns is how many of the latest turns of a conversation an
// LLM tier sends with the question when LLMConfig.HistoryTurns is zero.
const DefaultHistoryTurns = 6

// maxHistoryPromptBytes bounds the history an LLM tier sends: the latest
// turns that fit, the oldest dropped first. maxTurnRunes caps one turn.
const (
	maxHistoryPromptBytes = 8 << 10
	maxTurnRunes          = 2000
)

// errConversation reports a question a cache tier does not serve or
// store because it has a history.
var errConversation = errors.New("a question with history is not cached")

// HistoryDigest returns a digest of history, "" when it is empty. Two
// histories have the same digest only when they hold the same turns
// (roles and contents) in the same order, so a key that includes it never
// lets one conversation share what was made for another: the pipeline's
// flight key does. It is a hex SHA-256 prefix of 32 characters.
func HistoryDigest(history []Turn) string {
	if len(history) == 0 {
		return ""
	}
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, t := range history {
		for _, s := range [2]string{t.Role, t.Content} {
			h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
			h.Write([]byte(s))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// followUp returns what the knowledge base is searched for on q's behalf:
// its question with the contents of its earlier user turns.
func (q Query) followUp() retrieval.FollowUp {
	f := retrieval.FollowUp{Question: q.Question}
	for _, t := range q.History {
		if t.Role == RoleUser {
			f.Previous = append(f.Previous, t.Content)
		}
	}
	return f
}

// historyMessages returns the latest turns of history as chat messages,
// oldest first: at most n turns (none for n < 0), each cut to
// maxTurnRunes, as many as fit in maxHistoryPromptBytes, the oldest
// dropped first.
func historyMessages(history []Turn, n int) []openai.ChatCompletionMessage {
	if n < 0 || len(history) == 0 {
		return nil
	}
	if n == 0 {
		n = DefaultHistoryTurns
	}
	first, size := len(history), 0
	for first > 0 && len(history)-first < n {
		c := clip(strings.TrimSpace(history[first-1].Content), maxTurnRunes)
		if size+len(c) > maxHistoryPromptBytes {
			break
		}
		size += len(c)
		first--
	}
	out := make([]openai.ChatCompletionMessage, 0, len(history)-first)
	for _, t := range history[first:] {
		role := openai.ChatMessageRoleUser
		if t.Role == RoleAssistant {
			role = openai.ChatMessageRoleAssistant
		}
		out = append(out, openai.ChatCompletionMessage{Role: role, Content: clip(strings.TrimSpace(t.Content), maxTurnRunes)})
	}
	return out
}
