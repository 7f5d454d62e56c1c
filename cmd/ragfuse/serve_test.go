package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ragfuse/ragfuse/api"
	"github.com/ragfuse/ragfuse/tiers"
)

// lockedWriter is an io.Writer safe for concurrent use that closes
// started on the first write.
type lockedWriter struct {
	mu      sync.Mutex
	w       *bytes.Buffer
	started chan struct{}
	once    sync.Once
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.once.Do(func() { close(l.started) })
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// client talks to a running server.
type client struct {
	t   *testing.T
	url string
}

func (c *client) call(method, path, body string, headers ...string) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.url+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (c *client) ask(question, lang string) api.AskResponse {
	c.t.Helper()
	body, _ := json.Marshal(map[string]string{"question": question})
	code, b := c.call(http.MethodPost, "/v1/ask", string(body), "Accept-Language", lang)
	if code != http.StatusOK {
		c.t.Fatalf("ask %q: %d %s", question, code, b)
	}
	var a api.AskResponse
	if err := json.Unmarshal(b, &a); err != nil {
		c.t.Fatal(err)
	}
	return a
}

func (c *client) setFault(model, fault string) {
	c.t.Helper()
	if code, b := c.call(http.MethodPut, "/v1/demo/faults/"+model, fault); code != http.StatusOK {
		c.t.Fatalf("set fault %s %s: %d %s", model, fault, code, b)
	}
}

// startDemo assembles the demo exactly as serve does and serves it on a
// loopback port until the test ends.
func startDemo(t *testing.T, logs io.Writer) *client {
	t.Helper()
	a, err := assemble(serveOptions{}, slog.New(slog.NewTextHandler(logs, nil)), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.server.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		a.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return &client{t: t, url: "http://" + l.Addr().String()}
}

// TestDemoEndToEnd runs the embedded demo on a real port and walks a
// question down the chain by switching faults through the demo route:
// primary -> fallback -> retrieval -> static.
func TestDemoEndToEnd(t *testing.T) {
	var logs bytes.Buffer
	lw := &lockedWriter{w: &logs, started: make(chan struct{})}
	c := startDemo(t, lw)

	if code, b := c.call(http.MethodGet, "/readyz", ""); code != http.StatusOK {
		t.Fatalf("readyz: %d %s", code, b)
	}

	steps := []struct {
		name     string
		faults   map[string]string // model -> fault JSON, set before asking
		trip     string            // a breaker to force open before asking
		question string
		lang     string
		source   tiers.Source
		note     string
		actions  api.Actions
	}{
		{"primary answers", nil, "", "How do I return an item?", "en", tiers.SourcePrimary, "", api.Actions{}},
		{"same question from the cache", nil, "", "How do I return an item?", "en", tiers.SourceCache, "", api.Actions{}},
		{"primary down", map[string]string{demoPrimary: `{"mode":"status","status":503}`}, "",
			"How long does a refund take?", "zh-CN,zh;q=0.9", tiers.SourceFallback,
			"当前使用备用服务，回答质量可能略有下降。", api.Actions{Refresh: true}},
		{"both models down", map[string]string{demoFallback: `{"mode":"reset"}`}, "",
			"How do I reset my password?", "en", tiers.SourceRetrieval,
			"Automatic answers are temporarily unavailable; here are the most relevant knowledge-base articles.",
			api.Actions{RetryLater: true}},
		{"retrieval switched off too", nil, "tier/retrieval",
			"Can I change my delivery address?", "en", tiers.SourceStatic,
			"We cannot answer automatically right now; you can contact customer service.",
			api.Actions{CustomerService: true}},
	}
	for _, st := range steps {
		for m, f := range st.faults {
			c.setFault(m, f)
		}
		if st.trip != "" {
			if code, b := c.call(http.MethodPost, "/v1/admin/breakers/trip", `{"breaker":"`+st.trip+`"}`); code != http.StatusOK {
				t.Fatalf("trip %s: %d %s", st.trip, code, b)
			}
		}
		a := c.ask(st.question, st.lang)
		if a.Source != st.source || a.Note != st.note || a.Actions != st.actions {
			t.Fatalf("%s: source %s note %q actions %+v attempts %+v; want %s %q %+v",
				st.name, a.Source, a.Note, a.Actions, a.Attempts, st.source, st.note, st.actions)
		}
		if a.Answer == "" || a.RequestID == "" {
			t.Fatalf("%s: empty answer or request id: %+v", st.name, a)
		}
		if st.source == tiers.SourceRetrieval && len(a.Docs) == 0 {
			t.Fatalf("%s: no docs", st.name)
		}
	}

	if code, b := c.call(http.MethodDelete, "/v1/demo/faults", ""); code != http.StatusOK {
		t.Fatalf("clear faults: %d %s", code, b)
	}
	code, b := c.call(http.MethodGet, "/v1/status", "")
	if code != http.StatusOK {
		t.Fatalf("status: %d", code)
	}
	var st api.StatusResponse
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Breakers) == 0 || !st.KnowledgeBase.Loaded {
		t.Fatalf("status %s", b)
	}
	if code, b := c.call(http.MethodGet, "/metrics", ""); code != http.StatusOK ||
		!bytes.Contains(b, []byte(`ragfuse_questions_total{source="static"} 1`)) {
		t.Fatalf("metrics: %d", code)
	}
	if !strings.Contains(lw.String(), "question answered") {
		t.Fatalf("no question log lines: %s", lw.String())
	}
}

// serving is `ragfuse serve` running on a goroutine.
type serving struct {
	url  string
	out  *lockedWriter
	stop func() int // stops serve and returns its exit code
}

// serveInProcess runs `ragfuse serve args...` with getenv until stop, and
// returns once it listens.
func serveInProcess(t *testing.T, getenv func(string) string, args ...string) serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &lockedWriter{w: &bytes.Buffer{}, started: make(chan struct{})}
	done := make(chan int, 1)
	listening := make(chan string, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...),
			&env{stdout: w, stderr: w, getenv: getenv, listening: func(url string) { listening <- url }})
	}()
	select {
	case url := <-listening:
		return serving{url: url, out: w, stop: func() int {
			cancel()
			code := <-done
			http.DefaultClient.CloseIdleConnections()
			return code
		}}
	case code := <-done:
		cancel()
		t.Fatalf("serve exited %d: %s", code, w.String())
	}
	return serving{}
}

// TestServeCommand runs `ragfuse serve` itself, demo mode, on a free port,
// and checks the banner and a clean stop.
func TestServeCommand(t *testing.T) {
	s := serveInProcess(t, func(string) string { return "" }, "--demo-faults", "demo-primary=status:500")
	url, w := s.url, s.out
	a := (&client{t: t, url: url}).ask("How do I return an item?", "en")
	if code := s.stop(); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if a.Source != tiers.SourceFallback {
		t.Errorf("with the primary down from the start: source %s", a.Source)
	}
	banner := w.String()
	for _, want := range []string{"ragfuse DEMO", "Open the web console in a browser: " + url + "/console",
		"curl -s " + url + "/v1/ask", "/v1/demo/faults/demo-primary", "--config", "Started with faults: demo-primary=status"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
}

// TestServeConfigReachesTheServer: the server:, auth: and notes: sections
// of a configuration file reach the HTTP server: its address, question
// limit and language, the keys read from the environment, and the notes.
func TestServeConfigReachesTheServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	body := `server: {addr: "127.0.0.1:18777", max_question_bytes: 10, default_language: en}
auth: {keys: [{key_env: TEST_RAGFUSE_KEY, tenant: acme}]}
notes: {en: {static: {note: "Call us.", retry_later: true}}}
tiers: [{kind: static, message: hi}]
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string { return map[string]string{"TEST_RAGFUSE_KEY": "sk-test-key"}[k] }
	a, err := assemble(serveOptions{config: path}, slog.New(slog.NewTextHandler(io.Discard, nil)), getenv)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.addr != "127.0.0.1:18777" {
		t.Errorf("addr %q", a.addr)
	}
	ts := httptest.NewServer(a.server.Handler())
	defer ts.Close()
	c := &client{t: t, url: ts.URL}
	if code, _ := c.call(http.MethodPost, "/v1/ask", `{"question":"hi?"}`); code != http.StatusUnauthorized {
		t.Errorf("without a key: %d, want 401", code)
	}
	auth := []string{"Authorization", "Bearer sk-test-key"}
	if code, b := c.call(http.MethodPost, "/v1/ask", `{"question":"0123456789A"}`, auth...); code != http.StatusRequestEntityTooLarge {
		t.Errorf("an 11-byte question: %d %s, want 413", code, b)
	}
	code, b := c.call(http.MethodPost, "/v1/ask", `{"question":"hi?"}`, auth...)
	var res api.AskResponse
	if err := json.Unmarshal(b, &res); code != http.StatusOK || err != nil {
		t.Fatalf("ask: %d %s", code, b)
	}
	if res.Note != "Call us." || !res.Actions.RetryLater || !res.Actions.CustomerService {
		t.Errorf("note %q, actions %+v; want the configured en note and retry_later", res.Note, res.Actions)
	}
}

// TestServeTracing runs serve with OTEL_EXPORTER_OTLP_ENDPOINT naming a
// collector: a question's spans reach it, at the latest when serve stops.
func TestServeTracing(t *testing.T) {
	var mu sync.Mutex
	var posts [][]byte
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" {
			mu.Lock()
			posts = append(posts, b)
			mu.Unlock()
		}
	}))
	defer col.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	s := serveInProcess(t, os.Getenv)
	(&client{t: t, url: s.url}).ask("How do I return an item?", "en")
	if code := s.stop(); code != exitOK {
		t.Fatalf("exit %d: %s", code, s.out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	all := bytes.Join(posts, nil)
	for _, want := range []string{"ragfuse", "question", "tier/primary", "model/" + demoPrimary} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("the collector got no %q in %d posts", want, len(posts))
		}
	}
}
