package tiers

import (
	"context"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

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
			a, err := streamLLM(srv, g, "a", "b").AnswerStream(context.Background(), Query{Question: "how do returns work"}, req)
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
