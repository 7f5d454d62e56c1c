package tiers

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

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
			l := NewLLM(LLMConfig{Name: "primary", Candidates: []Candidate{candidate("m", srv.URL)}, Guard: g})
			a, err := l.AnswerStream(context.Background(), Query{Question: "q"}, req)
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
