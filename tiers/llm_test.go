package tiers

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

	"go.opentelemetry.io/otel/trace"

	"github.com/ragfuse/ragfuse/retrieval"
)

// fakeRetriever returns its docs, or err.
type fakeRetriever struct {
	docs  []retrieval.Doc
	err   error
	mu    sync.Mutex
	calls int
}

func (f *fakeRetriever) Retrieve(_ context.Context, _ string, k int) ([]retrieval.Doc, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return f.docs[:min(k, len(f.docs))], nil
}

var testDocs = []retrieval.Doc{
	{ID: "returns", Title: "Returns policy", Text: "Items can be returned within 30 days.", Score: 3},
	{ID: "shipping", Title: "Shipping times", Text: "Orders ship in 2 days.", Score: 2},
	{ID: "warranty", Title: "Warranty", Text: "One year warranty.", Score: 1},
}

// okBody is a chat completion with one answer.
const okBody = `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":2,"total_tokens":13}}`

// upstream serves every chat completion with handler h and records the
// last request body.
func upstream(t *testing.T, h http.HandlerFunc) (*httptest.Server, *string) {
	t.Helper()
	var mu sync.Mutex
	last := new(string)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		*last = string(b)
		mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, last
}

func reply(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func candidate(id, url string) Candidate {
	return Candidate{ID: id, Client: NewClient(ClientConfig{BaseURL: url, APIKey: "k"})}
}

func TestLLMErrorKinds(t *testing.T) {
	reset := func(w http.ResponseWriter, _ *http.Request) {
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		_ = c.Close()
	}
	// A reset or an unreadable answer reports the prompt's estimate: the
	// model read it, though no usage came back.
	est := Usage{PromptTokens: estimatePrompt(buildMessages(DefaultSystemPrompt, "hi", nil, nil))}
	tests := []struct {
		name       string
		h          http.HandlerFunc
		kind       Kind
		status     int
		retryAfter time.Duration
		usage      Usage
	}{
		{"500", reply(500, `{"error":{"message":"boom","type":"server_error"}}`), KindServer, 500, 0, Usage{}},
		{"503 not json", reply(503, `upstream down`), KindServer, 503, 0, Usage{}},
		{"401", reply(401, `{"error":{"message":"bad key","code":"invalid_api_key"}}`), KindAuth, 401, 0, Usage{}},
		{"403", reply(403, `{"error":{"message":"forbidden"}}`), KindAuth, 403, 0, Usage{}},
		{"429 seconds", reply(429, `{"error":{"message":"slow down"}}`, "Retry-After", "7"), KindRateLimited, 429, 7 * time.Second, Usage{}},
		{"429 date", reply(429, `{"error":{"message":"slow down"}}`,
			"Retry-After", "Mon, 02 Jan 2006 15:04:09 GMT", "Date", "Mon, 02 Jan 2006 15:04:05 GMT"), KindRateLimited, 429, 4 * time.Second, Usage{}},
		{"429 no header", reply(429, `{"error":{"message":"slow down"}}`), KindRateLimited, 429, 0, Usage{}},
		{"400 context length", reply(400, `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`), KindContextLength, 400, 0, Usage{}},
		{"400 content filter", reply(400, `{"error":{"message":"filtered","code":"content_filter"}}`), KindContentFilter, 400, 0, Usage{}},
		{"400 other", reply(400, `{"error":{"message":"bad","code":"invalid_value"}}`), KindBadRequest, 400, 0, Usage{}},
		{"404 model", reply(404, `{"error":{"message":"no such model","code":"model_not_found"}}`), KindOther, 404, 0, Usage{}},
		{"malformed", reply(200, `{"choices": [ not json`), KindMalformed, 0, 0, est},
		{"empty choices", reply(200, `{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":0}}`), KindEmpty, 0, 0, Usage{PromptTokens: 9}},
		{"empty content", reply(200, `{"choices":[{"message":{"role":"assistant","content":"  "}}],"usage":{"prompt_tokens":9,"completion_tokens":1}}`), KindEmpty, 0, 0, Usage{9, 1}},
		{"finish content_filter", reply(200, `{"choices":[{"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}]}`), KindContentFilter, 0, 0, Usage{}},
		{"reset", reset, KindConnection, 0, 0, est},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := upstream(t, tt.h)
			l := NewLLM(LLMConfig{Name: "primary", Candidates: []Candidate{candidate("m1", srv.URL)}})
			_, err := l.Answer(context.Background(), Query{Question: "hi"})
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if te.Kind != tt.kind || te.Status != tt.status || te.RetryAfter != tt.retryAfter || te.Usage != tt.usage {
				t.Fatalf("got kind=%s status=%d retry=%v usage=%v, want %s %d %v %v (%v)",
					te.Kind, te.Status, te.RetryAfter, te.Usage, tt.kind, tt.status, tt.retryAfter, tt.usage, err)
			}
			if te.Tier != "primary" || te.Model != "m1" {
				t.Fatalf("tier=%q model=%q", te.Tier, te.Model)
			}
			if strings.Contains(err.Error(), "Bearer") {
				t.Fatalf("error leaks the key: %v", err)
			}
		})
	}
}

func TestLLMRefusedConnection(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	l := NewLLM(LLMConfig{Candidates: []Candidate{candidate("m1", url)}})
	_, err := l.Answer(context.Background(), Query{Question: "hi"})
	if k := KindOf(err); k != KindConnection {
		t.Fatalf("kind = %s (%v), want connection", k, err)
	}
}

func TestLLMTimeoutAndCancel(t *testing.T) {
	release := make(chan struct{})
	srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	l := NewLLM(LLMConfig{Candidates: []Candidate{candidate("m1", srv.URL), candidate("m2", srv.URL)}})

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.Answer(ctx, Query{Question: "hi"}); KindOf(err) != KindTimeout {
		t.Fatalf("deadline: kind = %s (%v)", KindOf(err), err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := l.Answer(ctx, Query{Question: "hi"}); KindOf(err) != KindCanceled {
		t.Fatalf("cancel: kind = %s (%v)", KindOf(err), err)
	}
}

func TestLLMAnswerAndPrompt(t *testing.T) {
	srv, last := upstream(t, reply(200, okBody))
	ret := &fakeRetriever{docs: testDocs}
	l := NewLLM(LLMConfig{Name: "fb", Source: SourceFallback, Retriever: ret, ContextDocs: 2,
		Candidates: []Candidate{{ID: "turbo", Model: "qwen-turbo", MaxTokens: 64,
			Client: NewClient(ClientConfig{BaseURL: srv.URL + "/"})}}})
	a, err := l.Answer(context.Background(), Query{Question: "How do I return an item?"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != "hello there" || a.Source != SourceFallback || a.Model != "turbo" || a.Usage != (Usage{11, 2}) || len(a.Docs) != 2 {
		t.Fatalf("answer = %+v", a)
	}
	for _, want := range []string{`"model":"qwen-turbo"`, `"max_tokens":64`, "only the numbered documents",
		"same language as the question", `[1] Returns policy`, `[2] Shipping times`, "Question: How do I return an item?"} {
		if !strings.Contains(*last, want) {
			t.Errorf("request lacks %q:\n%s", want, *last)
		}
	}
	if strings.Contains(*last, "Warranty") {
		t.Errorf("request has a third document")
	}
	if l.DocsWanted() != 2 || l.Name() != "fb" || l.Source() != SourceFallback {
		t.Fatalf("accessors: %d %q %q", l.DocsWanted(), l.Name(), l.Source())
	}
}

func TestLLMFailedRetrievalStillAsks(t *testing.T) {
	srv, last := upstream(t, reply(200, okBody))
	l := NewLLM(LLMConfig{Retriever: &fakeRetriever{err: errors.New("index down")},
		Candidates: []Candidate{candidate("m", srv.URL)}})
	a, err := l.Answer(context.Background(), Query{Question: "q"})
	if err != nil || len(a.Docs) != 0 {
		t.Fatalf("a=%+v err=%v", a, err)
	}
	if !strings.Contains(*last, "No documents were found") {
		t.Fatalf("prompt: %s", *last)
	}
}

// recordingGuard allows the candidates not in deny and records releases.
type recordingGuard struct {
	deny map[string]bool
	mu   sync.Mutex
	log  []string
}

func (g *recordingGuard) Acquire(ctx context.Context, tier string, c Candidate) (context.Context, func(error, Usage), bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deny[c.ID] {
		g.log = append(g.log, c.ID+":skip")
		return nil, nil, false
	}
	return ctx, func(err error, u Usage) {
		g.mu.Lock()
		defer g.mu.Unlock()
		k := "ok"
		if err != nil {
			k = string(KindOf(err))
		}
		g.log = append(g.log, c.ID+":"+k)
	}, true
}

func TestLLMCandidatesInOrderWithGuard(t *testing.T) {
	bad, _ := upstream(t, reply(503, `{"error":{"message":"down"}}`))
	good, _ := upstream(t, reply(200, okBody))
	g := &recordingGuard{deny: map[string]bool{"open": true}}
	l := NewLLM(LLMConfig{Candidates: []Candidate{
		candidate("open", good.URL), candidate("down", bad.URL), candidate("up", good.URL), candidate("never", good.URL)}})
	a, err := l.Answer(context.Background(), Query{Question: "q", Guard: g})
	if err != nil || a.Model != "up" {
		t.Fatalf("a=%+v err=%v", a, err)
	}
	if got := strings.Join(g.log, " "); got != "open:skip down:server_error up:ok" {
		t.Fatalf("guard log = %q", got)
	}

	// Every candidate skipped: unavailable, no call.
	g = &recordingGuard{deny: map[string]bool{"open": true, "down": true, "up": true, "never": true}}
	l2 := NewLLM(LLMConfig{Candidates: l.Candidates()})
	_, err = l2.Answer(context.Background(), Query{Question: "q", Guard: g})
	if KindOf(err) != KindUnavailable || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
}

func TestLLMQuestionFaultStopsTier(t *testing.T) {
	long, _ := upstream(t, reply(400, `{"error":{"message":"too long","code":"context_length_exceeded"}}`))
	good, _ := upstream(t, reply(200, okBody))
	g := &recordingGuard{}
	l := NewLLM(LLMConfig{Candidates: []Candidate{candidate("a", long.URL), candidate("b", good.URL)}})
	_, err := l.Answer(context.Background(), Query{Question: "q", Guard: g})
	if KindOf(err) != KindContextLength || len(g.log) != 1 {
		t.Fatalf("err=%v log=%v", err, g.log)
	}
}

func TestLLMNoClient(t *testing.T) {
	l := NewLLM(LLMConfig{Candidates: []Candidate{{ID: "x"}}})
	if _, err := l.Answer(context.Background(), Query{}); KindOf(err) != KindOther {
		t.Fatalf("err = %v", err)
	}
}

type panickingDoer struct{}

func (panickingDoer) Do(*http.Request) (*http.Response, error) { panic("transport bug") }

// TestLLMPanickingCandidateIsReleased guards CandidateGuard's "release must
// be called exactly once": a candidate call that panics is released with
// an error before the panic goes on to the tier's caller.
func TestLLMPanickingCandidateIsReleased(t *testing.T) {
	g := &recordingGuard{}
	l := NewLLM(LLMConfig{Candidates: []Candidate{
		{ID: "p", Client: NewClient(ClientConfig{BaseURL: "http://127.0.0.1:1", HTTPClient: panickingDoer{}})}}})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic was swallowed")
			}
		}()
		_, _ = l.Answer(context.Background(), Query{Question: "q", Guard: g})
	}()
	if got := strings.Join(g.log, " "); got != "p:other" {
		t.Fatalf("guard log = %q, want one release with kind other", got)
	}
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Kind: KindServer, Tier: "primary", Model: "m", Status: 503, Err: errors.New("down")}
	if got := e.Error(); got != "tiers: primary (m): server_error (HTTP 503): down" {
		t.Fatalf("Error() = %q", got)
	}
}

// spanGuard gives each candidate call a context carrying a tracing span
// of its own, as the pipeline's guard does when tracing is on.
type spanGuard struct{ spans map[string]trace.SpanContext }

func (g *spanGuard) Acquire(ctx context.Context, _ string, c Candidate) (context.Context, func(error, Usage), bool) {
	return trace.ContextWithSpanContext(ctx, g.spans[c.ID]), func(error, Usage) {}, true
}

// TestLLMSendsTraceparentOfGuardContext: each candidate call is made with
// the context its guard gives, and carries that context's span to the
// upstream as a W3C traceparent header; a call without a span sends none.
func TestLLMSendsTraceparentOfGuardContext(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{}
	record := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got[r.Host] = r.Header.Get("traceparent")
			mu.Unlock()
			h(w, r)
		}
	}
	bad, _ := upstream(t, record(reply(503, `{"error":{"message":"down"}}`)))
	good, _ := upstream(t, record(reply(200, okBody)))
	span := func(b byte) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{b},
			TraceFlags: trace.FlagsSampled})
	}
	g := &spanGuard{spans: map[string]trace.SpanContext{"down": span(0xaa), "up": span(0xbb)}}
	l := NewLLM(LLMConfig{Candidates: []Candidate{candidate("down", bad.URL), candidate("up", good.URL)}})
	if _, err := l.Answer(context.Background(), Query{Question: "q", Guard: g}); err != nil {
		t.Fatal(err)
	}
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	want := map[string]string{
		host(bad):  "00-01020300000000000000000000000000-aa00000000000000-01",
		host(good): "00-01020300000000000000000000000000-bb00000000000000-01",
	}
	for h, w := range want {
		if got[h] != w {
			t.Errorf("upstream %s got traceparent %q, want %q", h, got[h], w)
		}
	}
	// Without a span: no header.
	if _, err := NewLLM(LLMConfig{Candidates: []Candidate{candidate("up", good.URL)}}).Answer(context.Background(),
		Query{Question: "q"}); err != nil || got[host(good)] != "" {
		t.Errorf("a call without a span sent traceparent %q (err %v)", got[host(good)], err)
	}
}
