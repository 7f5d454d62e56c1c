package api

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	modelPrimary  = "test-primary"
	modelFallback = "test-fallback"
)

// testDocs is a small knowledge base: questions about returns, refunds
// and shipping find documents; others find none.
var testDocs = []retrieval.Doc{
	{ID: "returns-policy", Title: "Returns policy", URL: "https://help.example.com/returns",
		Text: "You can return an item within 30 days of delivery. Start a return from your orders page."},
	{ID: "refund-time", Title: "How long refunds take",
		Text: "Refunds reach your card 3 to 5 business days after we receive the returned item."},
	{ID: "shipping-times", Title: "Shipping times",
		Text: "Standard shipping takes 2 to 4 days; express shipping arrives the next day."},
}

// testConfig is a full chain against the upstream at url, with timeouts
// short enough for tests.
func testConfig(url string) config.Config {
	return config.Config{
		Server: config.Server{RequestTimeout: 5 * time.Second, MaxQuestionBytes: 200, MaxBodyBytes: 2048,
			DefaultLanguage: "en"},
		Models: map[string]config.Model{
			modelPrimary:  {BaseURL: url, Model: modelPrimary},
			modelFallback: {BaseURL: url, Model: modelFallback},
		},
		Tiers: []config.Tier{
			{Name: "cache", Kind: "semantic_cache", Cache: config.CacheTier{Embedder: "hash"}, Timeout: 300 * time.Millisecond},
			{Name: "primary", Kind: "llm", LLM: config.LLMTier{Source: "primary", Models: []string{modelPrimary}}, Timeout: time.Second,
				Breaker: &config.Breaker{FailureThreshold: 1000}},
			{Name: "fallback", Kind: "llm", LLM: config.LLMTier{Source: "fallback", Models: []string{modelFallback}}, Timeout: time.Second,
				Breaker: &config.Breaker{FailureThreshold: 1000}},
			{Name: "retrieval", Kind: "retrieval", Retrieval: config.RetrievalTier{TopK: 2}},
			{Name: "static", Kind: "static", Static: config.StaticTier{Message: "Sorry, please contact customer service."}},
		},
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness is a Server over a real pipeline and a fault-injecting upstream.
type harness struct {
	t    *testing.T
	up   *llmtest.Server
	p    *pipeline.Pipeline
	srv  *Server
	reg  *prometheus.Registry
	logs *syncBuffer
}

type harnessOptions struct {
	config   func(*config.Config)
	api      func(*Config)
	upstream func(http.Handler) http.Handler // wraps the upstream's handler
	logTo    io.Writer                       // default: harness.logs
	tracer   trace.Tracer                    // records the pipeline's and the server's spans
	kb       *retrieval.KnowledgeBase        // default: testDocs
}

func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	up := llmtest.New(llmtest.Config{Models: []string{modelPrimary, modelFallback}})
	var handler http.Handler = up
	if o.upstream != nil {
		handler = o.upstream(up)
	}
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	t.Cleanup(up.Close) // runs first: releases hung handlers
	cfg := testConfig(ts.URL + "/v1")
	if o.config != nil {
		o.config(&cfg)
	}
	kb, err := o.kb, error(nil)
	if kb == nil {
		if kb, err = retrieval.New(testDocs); err != nil {
			t.Fatal(err)
		}
	}
	logs := &syncBuffer{}
	var logTo io.Writer = logs
	if o.logTo != nil {
		logTo = o.logTo
	}
	logger := slog.New(slog.NewJSONHandler(logTo, nil))
	reg := prometheus.NewRegistry()
	obs := NewObserver(reg, logger)
	p, err := config.Build(cfg, config.Env{Observer: obs, KnowledgeBase: kb, Tracer: o.tracer,
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("config.Build: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s := cfg.Server
	acfg := Config{Pipeline: p, Logger: logger, Observer: obs, Registry: reg, Tracer: o.tracer,
		Server: ServerOptions{Addr: s.Addr, MaxQuestionBytes: s.MaxQuestionBytes, MaxBodyBytes: s.MaxBodyBytes,
			ShutdownGrace: s.ShutdownGrace, DrainDelay: s.DrainDelay, DefaultLanguage: s.DefaultLanguage,
			MaxHistoryTurns: s.MaxHistoryTurns, MaxHistoryBytes: s.MaxHistoryBytes,
			ReadTimeout: s.ReadTimeout, IdleTimeout: s.IdleTimeout, MaxConnections: s.MaxConnections},
		OpenAI: OpenAIOptions{NoteInContent: cfg.OpenAI.NoteInContent}}
	if o.api != nil {
		o.api(&acfg)
	}
	srv, err := New(acfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h := &harness{up: up, p: p, srv: srv, reg: reg, logs: logs}
	if tt, ok := t.(*testing.T); ok {
		h.t = tt
	}
	return h
}

// loopbackClient and remoteClient are the remote addresses of requests
// from the server's host and from elsewhere.
const (
	loopbackClient = "127.0.0.1:40000"
	remoteClient   = "192.0.2.1:40000"
)

// do sends a request through the handler from a loopback client (see
// doFrom).
func (h *harness) do(method, path, body string, headers ...string) *httptest.ResponseRecorder {
	return h.doFrom(loopbackClient, method, path, body, headers...)
}

// doFrom sends a request from the client at remote through the handler.
// headers are name, value pairs; a JSON body gets Content-Type:
// application/json unless headers set one.
func (h *harness) doFrom(remote, method, path, body string, headers ...string) *httptest.ResponseRecorder {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	req.RemoteAddr = remote
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(w, req)
	return w
}

// libraryHarness serves a pipeline built in Go from opts, with no
// configuration file, through a Server configured by c (its Pipeline set
// here).
func libraryHarness(t *testing.T, opts pipeline.Options, c Config) *harness {
	t.Helper()
	p, err := pipeline.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c.Pipeline = p
	srv, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, p: p, srv: srv}
}

// ask posts a question and decodes a 200 answer.
func (h *harness) ask(question string, headers ...string) AskResponse {
	h.t.Helper()
	body, _ := json.Marshal(map[string]string{"question": question})
	w := h.do(http.MethodPost, "/v1/ask", string(body), headers...)
	if w.Code != http.StatusOK {
		h.t.Fatalf("ask %q: %d %s", question, w.Code, w.Body)
	}
	var a AskResponse
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
		h.t.Fatal(err)
	}
	return a
}

// upstreamCalls returns every chat and embedding call the upstream served.
func (h *harness) upstreamCalls() int64 {
	var n int64
	for _, st := range h.up.AllStats() {
		n += st.Calls + st.EmbeddingCalls
	}
	return n
}

// decodeError decodes an error body and checks its shape.
func decodeError(t *testing.T, w *httptest.ResponseRecorder) errorBody {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error Content-Type = %q, body %s", ct, w.Body)
	}
	var b errorBody
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		t.Fatalf("error body %s: %v", w.Body, err)
	}
	if b.Error.Code == "" || b.Error.Message == "" || b.Error.RequestID == "" {
		t.Fatalf("incomplete error body %s", w.Body)
	}
	if b.Error.RequestID != w.Header().Get(HeaderRequestID) {
		t.Fatalf("error request_id %q != header %q", b.Error.RequestID, w.Header().Get(HeaderRequestID))
	}
	return b
}
