package llmtest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"
)

// TestCloseReleasesHungHandlers guards the promise that Close returns
// promptly with hung and stalled requests in flight and leaves no
// goroutine behind.
func TestCloseReleasesHungHandlers(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv, blocked := startBlocking(t, 16)
	srv.SetFault("hang", Fault{Mode: ModeHang})
	srv.SetFault("stall", Fault{Mode: ModeStall, After: 1})

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = srv.URL
	cfg.HTTPClient = &http.Client{Transport: tr}
	c := openai.NewClientWithConfig(cfg)

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, model := range []string{"hang", "stall"} {
		for _, stream := range []bool{false, true} {
			wg.Go(func() {
				req := chatReq(model, "hi")
				if !stream {
					_, err := c.CreateChatCompletion(context.Background(), req)
					errs <- err
					return
				}
				st, err := c.CreateChatCompletionStream(context.Background(), req)
				if err == nil {
					_, err = recvAll(st)
					st.Close()
				}
				errs <- err
			})
		}
	}
	for range 4 {
		<-blocked
	}
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil {
			t.Error("a hung request succeeded after Close")
		}
	}
	if s := srv.Stats("hang"); s.Calls != 2 || s.StreamCalls != 1 || s.Faulted != 2 {
		t.Errorf("hang stats = %+v", s)
	}
	srv.Close() // idempotent
}

// TestCloseMounted covers a Server mounted in another http.Server: Close
// releases its hung handlers, and later requests get 503.
func TestCloseMounted(t *testing.T) {
	srv := New(Config{})
	blocked := make(chan struct{}, 1)
	srv.onBlock = func() { blocked <- struct{}{} }
	outer := httptest.NewServer(http.StripPrefix("/upstream", srv))
	defer outer.Close()
	srv.SetFault(AnyModel, Fault{Mode: ModeHang})

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	res := make(chan error, 1)
	go func() {
		resp, err := hc.Post(outer.URL+"/upstream/v1/chat/completions", "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
			err = errors.New("got a response: " + resp.Status)
		}
		res <- err
	}()
	<-blocked
	srv.Close()
	if err := <-res; err == nil || strings.Contains(err.Error(), "got a response") {
		t.Errorf("hung request after Close: %v, want a cut connection", err)
	}
	resp, err := hc.Post(outer.URL+"/upstream/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("after Close: %d, want 503", resp.StatusCode)
	}
}

func TestClientGoingAwayReleasesHandler(t *testing.T) {
	srv, blocked := startBlocking(t, 1)
	srv.SetFault("m", Fault{Mode: ModeHang})
	c := client(t, srv)
	ctx, cancel := context.WithCancel(t.Context())
	res := make(chan error, 1)
	go func() {
		_, err := c.CreateChatCompletion(ctx, chatReq("m", "hi"))
		res <- err
	}()
	<-blocked
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	// The handler returns without Close: handlers.Wait must not block.
	waited := make(chan struct{})
	go func() { srv.handlers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not return after the client went away")
	}
}

// TestMountedCloseCutsASlowBody: Close on a mounted Server (one it does
// not own the connections of) returns while a client is still sending a
// request body, rather than waiting for the client.
func TestMountedCloseCutsASlowBody(t *testing.T) {
	srv := New(Config{})
	reading := make(chan struct{})
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &firstRead{ReadCloser: r.Body, first: reading}
		srv.ServeHTTP(w, r)
	}))
	defer outer.Close()
	pr, pw := io.Pipe()
	defer pw.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		req, _ := http.NewRequest(http.MethodPost, outer.URL+"/v1/chat/completions", pr)
		if resp, err := (&http.Client{Transport: tr}).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	if _, err := pw.Write([]byte(`{"model":"m",`)); err != nil {
		t.Fatal(err)
	}
	<-reading // the handler is reading the body
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		pw.Close()
		<-closed
		t.Fatal("Close waited for a client still sending its body")
	}
	pw.Close()
	<-sent
}

// firstRead closes first when its body is first read.
type firstRead struct {
	io.ReadCloser
	first chan struct{}
	once  sync.Once
}

func (b *firstRead) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.first) })
	return b.ReadCloser.Read(p)
}
