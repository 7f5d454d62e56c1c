package llmtest

import (
	"context"
	"testing"
	"time"
)

// A latency fault of zero Delay adds no latency: it answers at once, plain
// and streamed, rather than hanging like ModeHang.
func TestZeroLatencyAnswers(t *testing.T) {
	srv := start(t, Config{})
	srv.SetFault(AnyModel, Fault{Mode: ModeLatency})
	c := client(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	resp, err := c.CreateChatCompletion(ctx, chatReq("m", "how do returns work"))
	if err != nil || len(resp.Choices) != 1 {
		t.Fatalf("plain: resp=%+v err=%v", resp, err)
	}
	st, err := c.CreateChatCompletionStream(ctx, chatReq("m", "how do returns work"))
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	defer st.Close()
	if _, err := st.Recv(); err != nil {
		t.Fatalf("stream recv: %v", err)
	}
}
