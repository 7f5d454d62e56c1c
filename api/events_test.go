package api

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// sseReader reads the events of a Server-Sent Events stream.
type sseReader struct{ r *bufio.Reader }

// next returns the next event's name and data; err is io.EOF at the end.
func (s sseReader) next() (name, data string, err error) {
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return "", "", err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && data != "":
			return name, data, nil
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
}

// until returns the data of the next event named name, skipping others.
func (s sseReader) until(t *testing.T, name string) string {
	t.Helper()
	for {
		n, d, err := s.next()
		if err != nil {
			t.Fatalf("stream ended before a %s event: %v", name, err)
		}
		if n == name {
			return d
		}
	}
}

// TestEventsFeed reads GET /v1/events: the history first, the status,
// each question as it ends (without its text by default), and the end of
// the stream when the server shuts down, which does not wait for it.
func TestEventsFeed(t *testing.T) {
	h := newHarness(t, harnessOptions{config: func(c *config.Config) { c.Tiers[1].Timeout = 300 * time.Millisecond }})
	url, cancel, served := serveLoopback(t, h.srv)
	h.ask("How do I return an item?") // before the feed opens: in its history

	res, err := http.Get(url + "/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("GET /v1/events: %d %s", res.StatusCode, ct)
	}
	sse := sseReader{bufio.NewReader(res.Body)}
	name, data, err := sse.next()
	var hist historyEvent
	if err != nil || name != "history" || json.Unmarshal([]byte(data), &hist) != nil {
		t.Fatalf("first event %s %s (%v), want history", name, data, err)
	}
	if len(hist.Buckets) != feedBuckets || len(hist.Questions) != 1 || hist.Questions[0].Source != "primary" ||
		hist.Questions[0].Question != "" {
		t.Fatalf("history %+v", hist)
	}
	var st StatusResponse
	if err := json.Unmarshal([]byte(sse.until(t, "status")), &st); err != nil || len(st.Tiers) != 5 {
		t.Fatalf("status event %+v: %v", st, err)
	}

	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
	a := h.ask("How long do refunds take?")
	var q questionEvent
	if err := json.Unmarshal([]byte(sse.until(t, "question")), &q); err != nil {
		t.Fatal(err)
	}
	if q.RequestID != a.RequestID || q.Source != "fallback" || !q.Degraded || q.Tenant != DefaultTenant ||
		len(q.Attempts) != 3 || q.Attempts[1].Outcome != "server_error" || q.Question != "" {
		t.Fatalf("question event %+v, want the fallback's answer of %s", q, a.RequestID)
	}
	_ = sse.until(t, "status") // the status goes on every second

	start := time.Now()
	cancel()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown waited %v for the feed", d)
	}
	// Once shutdown has begun, no feed opens.
	w := h.do(http.MethodGet, "/v1/events", "")
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("GET /v1/events while shutting down: %d", w.Code)
	}
}

// TestEventsShowQuestions: with console.show_questions, the feed carries
// each question's text.
func TestEventsShowQuestions(t *testing.T) {
	h := newHarness(t, harnessOptions{api: func(c *Config) { c.Console.ShowQuestions = true }})
	h.ask("How do I return an item?")
	if hist := h.srv.feed.history(time.Now()); len(hist.Questions) != 1 || hist.Questions[0].Question != "How do I return an item?" {
		t.Fatalf("history questions %+v", hist.Questions)
	}
}

// TestRootRedirectsToConsole: GET / leads to the console.
func TestRootRedirectsToConsole(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	w := h.do(http.MethodGet, "/", "")
	if w.Code != http.StatusFound || w.Header().Get("Location") != "/console" {
		t.Fatalf("GET /: %d, Location %q", w.Code, w.Header().Get("Location"))
	}
}
