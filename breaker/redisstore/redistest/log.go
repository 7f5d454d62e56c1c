package redistest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Log is a slog.Handler that keeps the records it gets, for tests that
// check what a store logs through an outage (one warning, one recovery).
type Log struct {
	mu   sync.Mutex
	recs []string // "LEVEL message attrs"
}

func (h *Log) Enabled(context.Context, slog.Level) bool { return true }

func (h *Log) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, b.String())
	return nil
}

func (h *Log) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *Log) WithGroup(string) slog.Handler      { return h }

// Count returns how many records start with prefix ("WARN", "INFO some
// message").
func (h *Log) Count(prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

// Level returns how many records are of level.
func (h *Log) Level(level slog.Level) int { return h.Count(level.String() + " ") }

// All returns every record, one per line.
func (h *Log) All() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.recs, "\n")
}
