package llmtest

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// TestHoldBreaks: while breaks are held, a ModeBreak answer sends what the
// fault says and keeps the connection open; it breaks when released, or
// ends with its request.
func TestHoldBreaks(t *testing.T) {
	srv, blocked := startBlocking(t, 4)
	srv.SetFault("m", Fault{Mode: ModeBreak, After: 2})
	c := client(t, srv)
	ctx := t.Context()

	release := srv.HoldBreaks()
	defer release()
	st, err := c.CreateChatCompletionStream(ctx, chatReq("m", "hello there"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 2 {
		if _, err := st.Recv(); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
	waitBlocked(t, blocked) // the handler holds the cut
	if got := srv.Stats("m").Chunks; got != 2 {
		t.Fatalf("chunks sent before the held break = %d, want 2", got)
	}
	plain := make(chan error, 1)
	go func() {
		_, err := c.CreateChatCompletion(ctx, chatReq("m", "hello there"))
		plain <- err
	}()
	waitBlocked(t, blocked) // the plain answer holds its cut after the headers
	select {
	case err := <-plain:
		t.Fatalf("the plain answer ended while its break was held: %v", err)
	default:
	}
	release()
	if _, err := st.Recv(); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("stream after release: %v, want a broken connection", err)
	}
	if err := <-plain; err == nil {
		t.Fatal("plain answer after release: no error, want a broken connection")
	}
	release() // a second release is a no-op

	// A held break ends with its request.
	release2 := srv.HoldBreaks()
	defer release2()
	cctx, cancel := context.WithCancel(ctx)
	held := make(chan error, 1)
	go func() {
		_, err := c.CreateChatCompletion(cctx, chatReq("m", "hello there"))
		held <- err
	}()
	waitBlocked(t, blocked)
	cancel()
	if err := <-held; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled request: %v", err)
	}
}

// waitBlocked waits for a handler to start waiting, or fails the test.
func waitBlocked(t *testing.T, blocked <-chan struct{}) {
	t.Helper()
	select {
	case <-blocked:
	case <-time.After(5 * time.Second):
		t.Fatal("no handler is holding its break")
	}
}
