package tiers

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// chat asks client one question and returns go-openai's error.
func chat(client *openai.Client) error {
	_, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model: "m", Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hi"}}})
	return err
}

// A redirect is followed as Client.Do follows it, API key stripped on
// the way to another host, and the endpoint that redirected sees each
// call once.
func TestClientFollowsRedirectsAsClientDo(t *testing.T) {
	var (
		mu    sync.Mutex
		auths []string
	)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		reply(200, okBody)(w, r)
	}))
	defer target.Close()
	// Another host name for the same address: Client.Do strips the key
	// on the way there.
	other := strings.Replace(target.URL, "127.0.0.1", "localhost", 1)
	var redirects atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirects.Add(1)
		http.Redirect(w, r, other+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer front.Close()

	plain := openai.DefaultConfig("secret")
	plain.BaseURL = front.URL + "/v1"
	if err := chat(openai.NewClientWithConfig(plain)); err != nil {
		t.Fatalf("through Client.Do: %v", err)
	}
	client := NewClient(ClientConfig{BaseURL: front.URL + "/v1", APIKey: "secret"})
	for i := range 2 {
		if err := chat(client); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) != 3 {
		t.Fatalf("target saw %d requests, want 3 (one through Client.Do, two through NewClient's)", len(auths))
	}
	for i, a := range auths {
		if a != auths[0] {
			t.Fatalf("request %d carried Authorization %q, Client.Do's carried %q", i, a, auths[0])
		}
		if strings.Contains(a, "secret") {
			t.Fatalf("request %d carried the API key to another host", i)
		}
	}
	if got := redirects.Load(); got != 3 {
		t.Fatalf("front saw %d requests, want 3: one a call", got)
	}
}

// A client with a cookie jar keeps its cookies; one with a Timeout keeps
// its timeout; a base URL with user information is sent as Basic
// authentication: each as through Client.Do.
func TestClientKeepsClientDoFeatures(t *testing.T) {
	t.Run("jar", func(t *testing.T) {
		var sawCookie atomic.Bool
		srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
			if c, err := r.Cookie("s"); err == nil && c.Value == "1" {
				sawCookie.Store(true)
			}
			http.SetCookie(w, &http.Cookie{Name: "s", Value: "1", Path: "/"})
			reply(200, okBody)(w, r)
		})
		jar, _ := cookiejar.New(nil)
		client := NewClient(ClientConfig{BaseURL: srv.URL, HTTPClient: &http.Client{Jar: jar}})
		for range 2 {
			if err := chat(client); err != nil {
				t.Fatal(err)
			}
		}
		if !sawCookie.Load() {
			t.Fatal("the second call did not send the cookie the first was given")
		}
	})
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		defer close(release)
		client := NewClient(ClientConfig{BaseURL: srv.URL, HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
		done := make(chan error, 1)
		go func() { done <- chat(client) }()
		select {
		case err := <-done:
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("err = %v, want the client's timeout", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the client's Timeout did not end the call")
		}
	})
	t.Run("userinfo", func(t *testing.T) {
		var user, pass string
		srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
			user, pass, _ = r.BasicAuth()
			reply(200, okBody)(w, r)
		})
		u, _ := url.Parse(srv.URL)
		u.User = url.UserPassword("ann", "pw")
		if err := chat(NewClient(ClientConfig{BaseURL: u.String()})); err != nil {
			t.Fatal(err)
		}
		if user != "ann" || pass != "pw" {
			t.Fatalf("basic auth = %q:%q, want ann:pw", user, pass)
		}
	})
}

// A failed request's error is the *url.Error Client.Do returns, so that
// it is classified and described alike.
func TestClientErrorsAsClientDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/v1"
	ln.Close() // nothing listens there now

	plain := openai.DefaultConfig("k")
	plain.BaseURL = base
	want := chat(openai.NewClientWithConfig(plain))
	got := chat(NewClient(ClientConfig{BaseURL: base, APIKey: "k"}))
	var wantUE, gotUE *url.Error
	if !errors.As(want, &wantUE) || !errors.As(got, &gotUE) {
		t.Fatalf("errors %v and %v, want *url.Error both", want, got)
	}
	if gotUE.Op != wantUE.Op || gotUE.URL != wantUE.URL || got.Error() != want.Error() {
		t.Fatalf("error %q (op %q, url %q), Client.Do's %q (op %q, url %q)",
			got, gotUE.Op, gotUE.URL, want, wantUE.Op, wantUE.URL)
	}
	if k := classifyCall("t", "m", got, nil, 0).Kind; k != KindConnection {
		t.Fatalf("kind = %s, want %s", k, KindConnection)
	}

	// An HTTP server behind an https base URL is named as such.
	srv, _ := upstream(t, reply(200, okBody))
	https := strings.Replace(srv.URL, "http://", "https://", 1)
	if err := chat(NewClient(ClientConfig{BaseURL: https})); !errors.Is(err, http.ErrSchemeMismatch) {
		t.Fatalf("err = %v, want %v", err, http.ErrSchemeMismatch)
	}
}

// prgServer is an endpoint in the Post/Redirect/Get style: it acts on a
// POST (counted in posts: a billed model call) and answers 303 See Other
// pointing at the stored result, which a GET then fetches.
func prgServer(t *testing.T, posts *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			_, _ = io.Copy(io.Discard, r.Body)
			posts.Add(1)
			http.Redirect(w, r, "/v1/result", http.StatusSeeOther)
			return
		}
		if r.Header.Get("Accept") == "text/event-stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`+"\n\n"+"data: [DONE]\n\n")
			return
		}
		reply(200, okBody)(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func chatStream(client *openai.Client) error {
	s, err := client.CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{
		Model: "m", Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hi"}}})
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		if _, err := s.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// A 303 See Other answers a POST the endpoint has acted on (RFC 9110
// 15.4.4): the POST is sent once, as through Client.Do, and the result
// is fetched with a GET, not made (and billed) twice.
func TestClientSeeOtherPostSentOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(*openai.Client) error
	}{
		{"chat", chat},
		{"stream", chatStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var posts atomic.Int32
			srv := prgServer(t, &posts)

			plain := openai.DefaultConfig("k")
			plain.BaseURL = srv.URL + "/v1"
			if err := tc.call(openai.NewClientWithConfig(plain)); err != nil {
				t.Fatalf("through Client.Do: %v", err)
			}
			if n := posts.Swap(0); n != 1 {
				t.Fatalf("Client.Do sent %d POSTs, want 1", n)
			}

			if err := tc.call(NewClient(ClientConfig{BaseURL: srv.URL + "/v1", APIKey: "k"})); err != nil {
				t.Fatalf("through NewClient: %v", err)
			}
			if n := posts.Load(); n != 1 {
				t.Fatalf("NewClient's client sent the POST %d times for one call, Client.Do once", n)
			}
		})
	}
}

// A client whose CheckRedirect refuses a redirect (ErrUseLastResponse, or
// an error, e.g. to keep prompts from leaving the configured host) sends
// the request once, as through Client.Do.
func TestClientRefusedRedirectSentOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func(*http.Request, []*http.Request) error
	}{
		{"ErrUseLastResponse", func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		{"error", func(*http.Request, []*http.Request) error { return errors.New("no redirects") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				calls.Add(1)
				http.Redirect(w, r, "https://elsewhere.invalid"+r.URL.Path, http.StatusTemporaryRedirect)
			}))
			defer srv.Close()
			hc := &http.Client{CheckRedirect: tc.check}

			plain := openai.DefaultConfig("k")
			plain.BaseURL = srv.URL + "/v1"
			plain.HTTPClient = hc
			errPlain := chat(openai.NewClientWithConfig(plain))
			if n := calls.Swap(0); n != 1 {
				t.Fatalf("Client.Do sent %d requests, want 1", n)
			}

			errOurs := chat(NewClient(ClientConfig{BaseURL: srv.URL + "/v1", APIKey: "k", HTTPClient: hc}))
			if n := calls.Load(); n != 1 {
				t.Fatalf("NewClient's client sent the request %d times for one call, Client.Do once (errors %v / %v)", n, errOurs, errPlain)
			}
		})
	}
}

// rtFunc is a RoundTripper made of a function.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A RoundTripper that answers a *Response with a nil Body but a positive
// ContentLength is named in the error, as by Client.Do, rather than the
// call failing as a truncated answer.
func TestClientNilBodyWithLength(t *testing.T) {
	rt := rtFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			r.Body.Close()
		}
		return &http.Response{StatusCode: 200, Status: "200 OK", ContentLength: int64(len(okBody)),
			Header: http.Header{"Content-Type": {"application/json"}}, Request: r}, nil
	})
	hc := &http.Client{Transport: rt}

	plain := openai.DefaultConfig("k")
	plain.BaseURL = "http://model.test/v1"
	plain.HTTPClient = hc
	want := chat(openai.NewClientWithConfig(plain))
	if want == nil || !strings.Contains(want.Error(), "nil Body") {
		t.Fatalf("Client.Do's error = %v, want the RoundTripper's nil Body named", want)
	}
	got := chat(NewClient(ClientConfig{BaseURL: "http://model.test/v1", APIKey: "k", HTTPClient: hc}))
	if got == nil || got.Error() != want.Error() {
		t.Fatalf("error %q, Client.Do's %q", got, want)
	}
}
