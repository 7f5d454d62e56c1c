package tiers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

// deltaLog collects what a stream emits.
type deltaLog struct {
	mu     sync.Mutex
	deltas []Delta
}

func (d *deltaLog) emit(x Delta) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deltas = append(d.deltas, x)
	return nil
}

func (d *deltaLog) text() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for _, x := range d.deltas {
		b.WriteString(x.Text)
	}
	return b.String()
}

func (d *deltaLog) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.deltas)
}

// firstTokenWait is the first-token timeout of the tests whose first model
// never sends a token: long enough that, on a loaded machine, the call
// reaches the server (which counts it) before the timeout gives up on it.
const firstTokenWait = 250 * time.Millisecond

// streamUpstream starts an llmtest server for models a and b.
func streamUpstream(t *testing.T) *llmtest.Server {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Config{Models: []string{"a", "b"}})
	t.Cleanup(srv.Close)
	return srv
}

func streamLLM(srv *llmtest.Server, ids ...string) *LLM {
	var cands []Candidate
	for _, id := range ids {
		cands = append(cands, candidate(id, srv.URL))
	}
	return NewLLM(LLMConfig{Name: "primary", Candidates: cands})
}

// fullAnswer returns the answer model gives to question without faults.
func fullAnswer(t *testing.T, srv *llmtest.Server, model string) string {
	t.Helper()
	a, err := streamLLM(srv, model).Answer(context.Background(), Query{Question: "how do returns work"})
	if err != nil {
		t.Fatal(err)
	}
	return a.Text
}

func TestAnswerStreamOK(t *testing.T) {
	srv := streamUpstream(t)
	want := fullAnswer(t, srv, "a")
	var log deltaLog
	g := &recordingGuard{}
	a, err := streamLLM(srv, "a").AnswerStream(context.Background(), Query{Question: "how do returns work", Guard: g},
		StreamRequest{Emit: log.emit, FirstTokenTimeout: time.Second, StallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st := srv.Stats("a")
	if a.Text != want || log.text() != want || a.Model != "a" || a.Source != SourcePrimary || a.Interrupted {
		t.Fatalf("answer %+v, emitted %q, want %q", a, log.text(), want)
	}
	if log.len() != int(st.Chunks) || st.StreamCalls != 1 {
		t.Fatalf("%d deltas for %d chunks, %d stream calls", log.len(), st.Chunks, st.StreamCalls)
	}
	if a.Usage.CompletionTokens != int(st.Chunks) || a.Usage.PromptTokens == 0 {
		t.Fatalf("usage %+v, stats %+v", a.Usage, st)
	}
	if got := strings.Join(g.log, " "); got != "a:ok" {
		t.Fatalf("guard log %q", got)
	}
}

func TestAnswerStreamFailsOverBeforeCommit(t *testing.T) {
	tests := []struct {
		name  string
		fault llmtest.Fault
		req   StreamRequest
		kind  Kind
	}{
		{"hang", llmtest.Fault{Mode: llmtest.ModeHang}, StreamRequest{FirstTokenTimeout: firstTokenWait}, KindTimeout},
		{"503 before the stream", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503}, StreamRequest{}, KindServer},
		{"429", llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: 3 * time.Second}, StreamRequest{}, KindRateLimited},
		{"reset", llmtest.Fault{Mode: llmtest.ModeReset}, StreamRequest{}, KindConnection},
		{"break at once", llmtest.Fault{Mode: llmtest.ModeBreak}, StreamRequest{}, KindConnection},
		{"stall at once", llmtest.Fault{Mode: llmtest.ModeStall}, StreamRequest{FirstTokenTimeout: firstTokenWait, StallTimeout: time.Hour}, KindTimeout},
		{"malformed at once", llmtest.Fault{Mode: llmtest.ModeMalformed}, StreamRequest{}, KindMalformed},
		{"empty", llmtest.Fault{Mode: llmtest.ModeEmpty}, StreamRequest{}, KindEmpty},
		{"break inside the commit buffer", llmtest.Fault{Mode: llmtest.ModeBreak, After: 3}, StreamRequest{CommitAfter: 1000}, KindConnection},
		{"stall inside the commit buffer", llmtest.Fault{Mode: llmtest.ModeStall, After: 3},
			StreamRequest{CommitAfter: 1000, StallTimeout: 40 * time.Millisecond}, KindTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := streamUpstream(t)
			want := fullAnswer(t, srv, "b")
			srv.ResetStats()
			srv.SetFault("a", tt.fault)
			var log deltaLog
			g := &recordingGuard{}
			tt.req.Emit = log.emit
			a, err := streamLLM(srv, "a", "b").AnswerStream(context.Background(), Query{Question: "how do returns work", Guard: g}, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if a.Model != "b" || a.Text != want || log.text() != want || a.Interrupted {
				t.Fatalf("answer %+v, emitted %q", a, log.text())
			}
			for _, d := range log.deltas {
				if d.Model != "b" {
					t.Fatalf("delta from %q reached the caller", d.Model)
				}
			}
			if got, want := strings.Join(g.log, " "), "a:"+string(tt.kind)+" b:ok"; got != want {
				t.Fatalf("guard log %q, want %q", got, want)
			}
			if sa, sb := srv.Stats("a"), srv.Stats("b"); sa.Calls != 1 || sb.Calls != 1 {
				t.Fatalf("calls a=%d b=%d", sa.Calls, sb.Calls)
			}
		})
	}
}

func TestAnswerStreamInterruptedAfterCommit(t *testing.T) {
	tests := []struct {
		name  string
		fault llmtest.Fault
		cause Kind
	}{
		{"break", llmtest.Fault{Mode: llmtest.ModeBreak, After: 3}, KindConnection},
		{"stall", llmtest.Fault{Mode: llmtest.ModeStall, After: 3}, KindTimeout},
		{"malformed", llmtest.Fault{Mode: llmtest.ModeMalformed, After: 3}, KindMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := streamUpstream(t)
			full := fullAnswer(t, srv, "a")
			srv.SetFault("a", tt.fault)
			var log deltaLog
			g := &recordingGuard{}
			a, err := streamLLM(srv, "a", "b").AnswerStream(context.Background(), Query{Question: "how do returns work", Guard: g},
				StreamRequest{Emit: log.emit, StallTimeout: 40 * time.Millisecond})
			var te *Error
			if !errors.As(err, &te) || te.Kind != KindInterrupted || KindOf(te.Err) != tt.cause {
				t.Fatalf("err = %v, want interrupted by %s", err, tt.cause)
			}
			if !a.Interrupted || a.Model != "a" || log.len() != 3 || a.Text != log.text() || !strings.HasPrefix(full, a.Text) || a.Text == full {
				t.Fatalf("answer %+v, %d deltas %q, full %q", a, log.len(), log.text(), full)
			}
			if te.Usage.CompletionTokens != 3 || a.Usage != te.Usage {
				t.Fatalf("wasted usage %+v, answer usage %+v", te.Usage, a.Usage)
			}
			if got := strings.Join(g.log, " "); got != "a:interrupted" {
				t.Fatalf("guard log %q: the next candidate must not be called after commit", got)
			}
			if srv.Stats("b").Calls != 0 {
				t.Fatal("b was called")
			}
		})
	}
}

func TestAnswerStreamReceiverGone(t *testing.T) {
	srv := streamUpstream(t)
	srv.SetFault("a", llmtest.Fault{Mode: llmtest.ModeStall, After: 2}) // would stall forever
	gone := errors.New("client went away")
	n := 0
	g := &recordingGuard{}
	a, err := streamLLM(srv, "a", "b").AnswerStream(context.Background(), Query{Question: "q", Guard: g},
		StreamRequest{Emit: func(Delta) error {
			n++
			if n == 2 {
				return gone
			}
			return nil
		}})
	if KindOf(err) != KindCanceled || !errors.Is(err, gone) || !a.Interrupted || n != 2 {
		t.Fatalf("err=%v answer=%+v emits=%d", err, a, n)
	}
	if got := strings.Join(g.log, " "); got != "a:canceled" {
		t.Fatalf("guard log %q", got)
	}
}

func TestAnswerStreamCallerCancels(t *testing.T) {
	srv := streamUpstream(t)
	srv.SetFault("a", llmtest.Fault{Mode: llmtest.ModeStall, After: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := streamLLM(srv, "a", "b").AnswerStream(ctx, Query{Question: "q"},
		StreamRequest{Emit: func(Delta) error { cancel(); return nil }})
	if KindOf(err) != KindCanceled || !a.Interrupted || srv.Stats("b").Calls != 0 {
		t.Fatalf("err=%v answer=%+v", err, a)
	}
}

func TestAnswerStreamContinue(t *testing.T) {
	srv, last := upstream(t, reply(200, okBody)) // a plain reply: go-openai fails to read it as a stream
	l := NewLLM(LLMConfig{Candidates: []Candidate{candidate("m", srv.URL)}})
	_, _ = l.AnswerStream(context.Background(), Query{Question: "How do I return an item?"},
		StreamRequest{Continue: "Items can be re"})
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal([]byte(*last), &req); err != nil || len(req.Messages) != 2 {
		t.Fatalf("request %s: %v", *last, err)
	}
	if !req.Stream || req.StreamOptions == nil || !req.StreamOptions.IncludeUsage {
		t.Errorf("not a stream with usage: %s", *last)
	}
	for _, want := range []string{"Question: How do I return an item?", "<<<\nItems can be re\n>>>",
		"Continue the answer exactly where it stopped"} {
		if !strings.Contains(req.Messages[1].Content, want) {
			t.Errorf("user message lacks %q:\n%s", want, req.Messages[1].Content)
		}
	}
	if strings.Contains(*last, `"role":"assistant"`) {
		t.Errorf("continuation must not rely on assistant prefill:\n%s", *last)
	}
}

func TestContinueMessages(t *testing.T) {
	base := []openai.ChatCompletionMessage{{Role: "system", Content: "s"}, {Role: "user", Content: "Question: 怎么退货"}}
	got := continueMessages(base, "怎么退货", "您可以", "")
	if !strings.Contains(got[1].Content, "请从截断处接着写完回答") || !strings.Contains(got[1].Content, "您可以") ||
		base[1].Content != "Question: 怎么退货" {
		t.Fatalf("zh: %q (base %q)", got[1].Content, base[1].Content)
	}
	got = continueMessages(base, "q", "PART", "Go on after: {partial} END")
	if !strings.HasSuffix(got[1].Content, "Go on after: PART END") {
		t.Fatalf("placeholder: %q", got[1].Content)
	}
	got = continueMessages(base, "q", "PART", "Keep going.")
	if !strings.HasSuffix(got[1].Content, "Keep going.\n\nPART") {
		t.Fatalf("no placeholder: %q", got[1].Content)
	}
}

// TestStreamFinishedThenLost: a model that sent its whole answer and its
// finish reason, and then lost only the usage chunk or [DONE] (a broken
// connection, a stall), answered: the answer is whole, not interrupted,
// not thrown away for the next candidate while held back, and not a
// failure of the model.
func TestStreamFinishedThenLost(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault llmtest.Fault
		req   StreamRequest
	}{
		{"break before [DONE], sent", llmtest.Fault{Mode: llmtest.ModeBreak, After: 1000}, StreamRequest{}},
		{"break before [DONE], held", llmtest.Fault{Mode: llmtest.ModeBreak, After: 1000}, StreamRequest{CommitAfter: 1000}},
		{"stall before [DONE]", llmtest.Fault{Mode: llmtest.ModeStall, After: 1000}, StreamRequest{StallTimeout: 50 * time.Millisecond}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := streamUpstream(t)
			full := fullAnswer(t, srv, "a")
			srv.SetFault("a", tt.fault)
			var log deltaLog
			g := &recordingGuard{}
			req := tt.req
			req.Emit = log.emit
			a, err := streamLLM(srv, "a", "b").AnswerStream(context.Background(), Query{Question: "how do returns work", Guard: g}, req)
			if err != nil || a.Interrupted || a.Model != "a" || a.Text != full || log.text() != full {
				t.Fatalf("model %q, interrupted %v, err %v\ntext %q\nsent %q\nwant a's whole answer %q",
					a.Model, a.Interrupted, err, a.Text, log.text(), full)
			}
			if a.Usage.CompletionTokens == 0 {
				t.Errorf("usage %+v: the chunks were not counted", a.Usage)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if len(g.log) != 1 || g.log[0] != "a:ok" {
				t.Errorf("guard heard %v, want [a:ok]", g.log)
			}
		})
	}
}

// pacedStream answers with n text chunks, gap apart, then [DONE]: an
// upstream that never stalls.
func pacedStream(n int, gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(s string) {
			_, _ = fmt.Fprintf(w, "data: %s\n\n", s)
			w.(http.Flusher).Flush()
		}
		for i := range n {
			finish := "null"
			if i == n-1 {
				finish = `"stop"`
			}
			send(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":"w%d "},"finish_reason":%s}]}`, i, finish))
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				return
			}
		}
		send("[DONE]")
	}
}

// TestAnswerStreamSlowReceiverIsNoStall: the stall timeout bounds the
// wait for the upstream's chunks; time the receiver takes in Emit is no
// gap of the stream, and must not interrupt it (nor count against the
// model's breaker).
func TestAnswerStreamSlowReceiverIsNoStall(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  StreamRequest
	}{
		{"commit at the first text", StreamRequest{}},
		{"held by time", StreamRequest{CommitAfterDuration: 5 * time.Millisecond, CommitAfter: 1000}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := upstream(t, pacedStream(5, 10*time.Millisecond))
			g := &recordingGuard{}
			var log deltaLog
			n := 0
			req := tt.req
			req.StallTimeout = 50 * time.Millisecond
			req.Emit = func(d Delta) error {
				n++
				if n == 1 {
					time.Sleep(150 * time.Millisecond) // a slow client
				}
				return log.emit(d)
			}
			l := NewLLM(LLMConfig{Name: "primary", Candidates: []Candidate{candidate("m", srv.URL)}})
			a, err := l.AnswerStream(context.Background(), Query{Question: "q", Guard: g}, req)
			const want = "w0 w1 w2 w3 w4 "
			if err != nil || a.Interrupted || a.Text != want || log.text() != want {
				t.Fatalf("err=%v answer=%+v emitted %q", err, a, log.text())
			}
			if got := g.log; len(got) != 1 || got[0] != "m:ok" {
				t.Fatalf("guard log %q", got)
			}
		})
	}
}
