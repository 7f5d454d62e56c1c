package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// slowConn is a connection posting to /v1/ask a body that would take
// minutes to arrive: the headers at once, then a byte every 200ms until
// the server answers. Its answer is read as soon as it comes, so that no
// write after the server closed the connection can reset it first.
type slowConn struct {
	c      net.Conn
	done   chan struct{} // closed when result is set
	result string        // "<status> <code> closed=<the server closed the connection> err=<error>"
}

// openSlow opens a slowConn to addr with Authorization auth (none if "");
// its answer must come before deadline.
func openSlow(addr, auth string, deadline time.Time) (*slowConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	head := "POST /v1/ask HTTP/1.1\r\nHost: ragfuse\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
	if auth != "" {
		head += "Authorization: " + auth + "\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n{"); err != nil {
		c.Close()
		return nil, err
	}
	sc := &slowConn{c: c, done: make(chan struct{})}
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-sc.done:
				return
			case <-t.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	go func() {
		defer close(sc.done)
		sc.result = answerOf(c, deadline)
	}()
	return sc, nil
}

// answerOf reads the answer on c: its status and error code, and whether
// the server then closed the connection.
func answerOf(c net.Conn, deadline time.Time) string {
	_ = c.SetReadDeadline(deadline)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "err=" + err.Error()
	}
	var b errorBody
	err = json.NewDecoder(resp.Body).Decode(&b)
	resp.Body.Close()
	// Closed: EOF, or a reset if a byte written after the close reached
	// the server first. An open connection would hit the deadline.
	_, rerr := br.ReadByte()
	closed := errors.Is(rerr, io.EOF) || errors.Is(rerr, syscall.ECONNRESET)
	return fmt.Sprintf("%d %s closed=%v err=%v", resp.StatusCode, b.Error.Code, closed, err)
}

// TestSlowBodiesCutByReadTimeout guards the process against slow bodies:
// with read_timeout 1s, 200 connections that send their body a byte at a
// time get 408 timeout_reading_request and are closed, 50 more without
// an API key get 401 at once and are closed without their body being
// read, and meanwhile /healthz and /v1/ask keep answering.
func TestSlowBodiesCutByReadTimeout(t *testing.T) {
	const slow, unauthenticated = 200, 50
	h := newHarness(t, harnessOptions{
		config: func(c *config.Config) { c.Server.ReadTimeout = time.Second },
		api:    func(c *Config) { c.Keys = map[string]string{"sk-acme": "acme"} },
	})
	url, _, _ := serveLoopback(t, h.srv)
	addr := strings.TrimPrefix(url, "http://")
	start := time.Now()
	deadline := start.Add(8 * time.Second)
	var conns []*slowConn
	for i := range slow + unauthenticated {
		auth := "Bearer sk-acme"
		if i >= slow {
			auth = ""
		}
		sc, err := openSlow(addr, auth, deadline)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		defer sc.c.Close()
		conns = append(conns, sc)
	}
	opened := time.Since(start)

	// While the slow bodies trickle in, the server answers others.
	client := &http.Client{Timeout: 3 * time.Second}
	defer client.CloseIdleConnections()
	for range 3 {
		resp, err := client.Get(url + "/healthz")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz during the attack: %v %v", resp, err)
		}
		resp.Body.Close()
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/ask", strings.NewReader(`{"question":"How do I return an item?"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-acme")
		resp, err = client.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/v1/ask during the attack: %v %v", resp, err)
		}
		resp.Body.Close()
	}

	want408 := "408 " + CodeTimeoutReading + " closed=true err=<nil>"
	want401 := "401 " + CodeUnauthorized + " closed=true err=<nil>"
	for i, sc := range conns {
		<-sc.done
		if want := want408; i < slow && sc.result != want || i >= slow && sc.result != want401 {
			t.Fatalf("slow connection %d: %s", i, sc.result)
		}
	}
	if took := time.Since(start); took > opened+4*time.Second {
		t.Errorf("the slow connections were cut after %v (opening them took %v), want about 1s", took, opened)
	}
}

// TestReadTimeoutSparesAnswers: read_timeout bounds how long a request
// takes to arrive, not its answer: a question answered after it, plain or
// streamed, arrives whole.
func TestReadTimeoutSparesAnswers(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	h := newHarness(t, harnessOptions{config: func(c *config.Config) { c.Server.ReadTimeout = readTimeout }})
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeLatency, Delay: 3 * readTimeout})
	url, _, _ := serveLoopback(t, h.srv)
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for _, path := range []string{"/v1/ask", "/v1/ask/stream"} {
		q := fmt.Sprintf(`{"question":"How long does a refund take? (%s)"}`, path)
		start := time.Now()
		resp, err := client.Post(url+path, "application/json", strings.NewReader(q))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"source":"primary"`) {
			t.Fatalf("%s: %d %v %s", path, resp.StatusCode, err, body)
		}
		if took := time.Since(start); took < 3*readTimeout {
			t.Fatalf("%s answered in %v, before the upstream's delay", path, took)
		}
	}
}

// TestLimitListenerRefusesBeyondMax: beyond its limit a connection waits
// for a slot and is closed unanswered if none frees in time; one that
// waits while a slot frees is served; the slots come back as connections
// close.
func TestLimitListenerRefusesBeyondMax(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused sync.WaitGroup
	l := newLimitListener(inner, 2, 100*time.Millisecond, refused.Done)
	defer l.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	held := []net.Conn{dial(), dial()}
	first := <-accepted
	<-accepted
	if l.Open() != 2 {
		t.Fatalf("Open = %d, want 2", l.Open())
	}
	refused.Add(1)
	extra := dial()
	_ = extra.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := extra.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the connection beyond the limit: %v, want it closed", err)
	}
	refused.Wait()
	// A connection that finds the listener full gets the slot one frees.
	time.Sleep(100 * time.Millisecond) // out of the refusing window
	waiting := dial()
	time.Sleep(20 * time.Millisecond)
	first.Close()
	select {
	case <-accepted:
	case <-time.After(2 * time.Second):
		t.Fatal("the waiting connection was not accepted when a slot freed")
	}
	if l.Open() != 2 {
		t.Errorf("Open = %d, want 2", l.Open())
	}
	_, _ = held, waiting
}

// TestIdleTimeoutClosesConnections: a kept-alive connection that sends no
// further request is closed after server.idle_timeout.
func TestIdleTimeoutClosesConnections(t *testing.T) {
	const idle = 200 * time.Millisecond
	h := newHarness(t, harnessOptions{config: func(c *config.Config) { c.Server.IdleTimeout = idle }})
	url, _, _ := serveLoopback(t, h.srv)
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: ragfuse\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("healthz: %v %v, want a kept-alive 200", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	start := time.Now()
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: %v, want it closed", err)
	}
	if took := time.Since(start); took < idle/2 || took > idle+2*time.Second {
		t.Errorf("the idle connection was closed after %v, want about %v", took, idle)
	}
}
