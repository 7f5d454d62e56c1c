package api

import (
	"net/http"
	"strconv"

	"github.com/ragfuse/ragfuse/tiers"
)

// Defaults of ServerOptions' history bounds.
const (
	DefaultMaxHistoryTurns = 20
	DefaultMaxHistoryBytes = 16 << 10
)

// checkTurn checks the role of the history turn at path.
func checkTurn(role, path string) error {
	if role != tiers.RoleUser && role != tiers.RoleAssistant {
		return newError(http.StatusBadRequest, CodeInvalidHistory, path+`.role must be "user" or "assistant"`)
	}
	return nil
}

// turnText is one turn of history as a request gave it, with where it was.
type turnText struct {
	role, content string
	path          string // "history[2]", "messages[3]"
}

// history returns the turns of a request as the pipeline takes them: each
// turn's content cleaned by cleanText, the rule of questions too, and
// refused (400 invalid_history) when nothing readable is left; then the newest
// l.historyTurns turns, the older dropped; and those refused (413
// history_too_long) when their contents pass l.historyBytes. The contents
// are valid UTF-8: the body was checked before decoding.
func history(turns []turnText, l limits) ([]tiers.Turn, error) {
	if len(turns) == 0 {
		return nil, nil
	}
	out := make([]tiers.Turn, 0, len(turns))
	for _, t := range turns {
		c, readable := cleanText(t.content)
		if !readable {
			return nil, newError(http.StatusBadRequest, CodeInvalidHistory,
				t.path+".content is empty, or only white space, control and format characters")
		}
		out = append(out, tiers.Turn{Role: t.role, Content: c})
	}
	out = out[max(0, len(out)-l.historyTurns):]
	size := 0
	for _, t := range out {
		size += len(t.Content)
	}
	if size > l.historyBytes {
		return nil, newError(http.StatusRequestEntityTooLarge, CodeHistoryTooLong,
			"the history is longer than the limit of "+strconv.Itoa(l.historyBytes)+" bytes")
	}
	return out, nil
}
