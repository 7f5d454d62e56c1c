package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	openai "github.com/sashabaranov/go-openai"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

func TestHealthAndReady(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, path := range []string{"/healthz", "/readyz"} {
		w := h.do(http.MethodGet, path, "")
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"status"`) {
			t.Errorf("%s: %d %s", path, w.Code, w.Body)
		}
		if w.Header().Get(HeaderRequestID) == "" {
			t.Errorf("%s: no request id", path)
		}
	}
	h.srv.draining.Store(true)
	w := h.do(http.MethodGet, "/readyz", "")
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("readyz while draining: %d", w.Code)
	}
	if b := decodeError(t, w); b.Error.Code != CodeUnavailable {
		t.Errorf("code %s", b.Error.Code)
	}
	if w := h.do(http.MethodGet, "/healthz", ""); w.Code != http.StatusOK {
		t.Errorf("healthz while draining: %d", w.Code)
	}
}

// TestHeadHealthAndReady: load balancers probe with HEAD; /healthz and
// /readyz answer it as they answer GET, without a body.
func TestHeadHealthAndReady(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	url, _, _ := serveLoopback(t, h.srv)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Head(url + path)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("HEAD %s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	h.srv.draining.Store(true)
	resp, err := http.Head(url + "/readyz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("HEAD /readyz while draining: %v %v", resp, err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
}

func TestStatusRoute(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
	h.ask("How do I return an item?")
	w := h.do(http.MethodGet, "/v1/status", "")
	if w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var st StatusResponse
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ti := range st.Tiers {
		names = append(names, ti.Name)
	}
	if strings.Join(names, ",") != "cache,primary,fallback,retrieval,static" {
		t.Errorf("tiers %v", names)
	}
	var model *BreakerInfo
	for i := range st.Breakers {
		if st.Breakers[i].Name == "model/"+modelPrimary {
			model = &st.Breakers[i]
		}
	}
	if model == nil || model.State != "closed" || model.Failures != 1 {
		t.Errorf("model breaker %+v in %+v", model, st.Breakers)
	}
	if !st.KnowledgeBase.Loaded || len(st.Caches) != 1 || st.Caches[0].Entries != 0 {
		t.Errorf("kb %+v caches %+v", st.KnowledgeBase, st.Caches)
	}
	if c := st.Caches[0]; c.Lookups != 1 || c.Hits != 0 || c.HitRate == nil || *c.HitRate != 0 {
		t.Errorf("cache lookups %+v, want one miss", c)
	}
	if len(st.Tiers) > 1 && !slices.Equal(st.Tiers[1].Models, []string{modelPrimary}) {
		t.Errorf("primary tier's models %v", st.Tiers[1].Models)
	}
}

// TestStatusCacheHitRate: the cache tiers' lookups since start, and the
// share that answered.
func TestStatusCacheHitRate(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	if st := statusOf(t, h); st.Caches[0].Lookups != 0 || st.Caches[0].HitRate != nil {
		t.Fatalf("before any question: %+v", st.Caches[0])
	}
	for range 3 {
		h.ask("How do I return an item?") // a miss, then two hits
	}
	h.ask("How long do refunds take?")
	c := statusOf(t, h).Caches[0]
	if c.Tier != "cache" || c.Entries != 2 || c.Lookups != 4 || c.Hits != 2 || c.HitRate == nil || *c.HitRate != 0.5 {
		t.Fatalf("cache %+v, want 4 lookups, 2 hits, hit rate 0.5", c)
	}
}

func TestMetricsRoute(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.ask("How do I return an item?")
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
	h.ask("How long do refunds take?")
	w := h.do(http.MethodGet, "/metrics", "")
	if w.Code != http.StatusOK {
		t.Fatalf("%d", w.Code)
	}
	body := w.Body.String()
	build := ReadBuild()
	for _, want := range []string{
		`ragfuse_questions_total{source="primary"} 1`,
		`ragfuse_questions_total{source="fallback"} 1`,
		`ragfuse_attempts_total{model="test-primary",outcome="server_error",tier="primary"} 1`,
		`ragfuse_attempts_total{model="test-fallback",outcome="success",tier="fallback"} 1`,
		`ragfuse_question_duration_seconds_count{source="primary"} 1`,
		`ragfuse_attempt_duration_seconds_count{model="test-primary",tier="primary"} 2`,
		`ragfuse_breaker_state{breaker="model/test-primary"} 0`,
		`ragfuse_cache_lookups_total{result="miss",tier="cache"} 2`,
		`ragfuse_cache_entries{tier="cache"} 1`,
		`ragfuse_tokens_total{kind="completion",model="test-primary",tier="primary"}`,
		`ragfuse_http_requests_total{code="200",method="POST",route="/v1/ask"} 2`,
		`ragfuse_knowledge_base_version`,
		fmt.Sprintf(`ragfuse_build_info{goversion=%q,modified="%t",revision=%q,version=%q} 1`,
			runtime.Version(), build.Modified, build.Revision, build.Version),
		// The Go runtime and the process, which attacks on the server show in.
		`go_goroutines `,
		`go_memstats_heap_alloc_bytes `,
		`process_open_fds `,
		`ragfuse_http_connections_open 0`,
		`ragfuse_http_connections_refused_total 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

func TestReloadRoute(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	w := h.do(http.MethodPost, "/v1/admin/reload", "")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"reloaded":true`) {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

func TestRequestIDs(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	a := h.do(http.MethodGet, "/healthz", "").Header().Get(HeaderRequestID)
	b := h.do(http.MethodGet, "/healthz", "").Header().Get(HeaderRequestID)
	if len(a) != 32 || a == b {
		t.Errorf("new request ids %q %q", a, b)
	}
	if got := h.do(http.MethodGet, "/healthz", "", HeaderRequestID, "evil\"id<>").Header().Get(HeaderRequestID); got == "evil\"id<>" {
		t.Error("an insane request id was echoed")
	}
}

// TestLogs checks the one line per question and that API keys never
// reach the log.
func TestLogs(t *testing.T) {
	const secret = "sk-very-secret-value"
	h := newHarness(t, harnessOptions{api: func(c *Config) { c.Keys = map[string]string{secret: "acme"} }})
	h.do(http.MethodPost, "/v1/ask", `{"question":"How do I return an item?"}`, "Authorization", "Bearer "+secret, HeaderRequestID, "log-1")
	h.do(http.MethodPost, "/v1/ask", `{"question":"hi"}`, "Authorization", "Bearer "+secret+"x")
	h.srv.e.GET("/boom", func(echo.Context) error { panic("boom") })
	h.do(http.MethodGet, "/boom", "", "Authorization", "Bearer "+secret)
	logs := h.logs.String()
	if strings.Contains(logs, secret) || strings.Contains(logs, "very-secret") {
		t.Fatalf("a key reached the log:\n%s", logs)
	}
	var line map[string]any
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"request_id":"log-1"`) && strings.Contains(l, "question answered") {
			_ = json.Unmarshal([]byte(l), &line)
		}
	}
	if line == nil {
		t.Fatalf("no question line for log-1:\n%s", logs)
	}
	for _, k := range []string{"tenant", "source", "attempts", "duration_ms"} {
		if _, ok := line[k]; !ok {
			t.Errorf("question line lacks %s: %v", k, line)
		}
	}
	if line["tenant"] != "acme" || line["source"] != "primary" {
		t.Errorf("question line %v", line)
	}
}

func TestDemoRoutes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.srv.demo, h.srv.models = h.up, []string{modelPrimary, modelFallback}
	h.srv.e = h.srv.routes()

	w := h.do(http.MethodPut, "/v1/demo/faults/"+modelPrimary, `{"mode":"status","status":503}`)
	if w.Code != http.StatusOK || h.up.Fault(modelPrimary).Status != 503 {
		t.Fatalf("put: %d %s", w.Code, w.Body)
	}
	if a := h.ask("How do I return an item?"); a.Source != tiers.SourceFallback {
		t.Fatalf("source %s after the primary fault", a.Source)
	}
	w = h.do(http.MethodGet, "/v1/demo/faults", "")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"test-primary":{"mode":"status","status":503}`) {
		t.Fatalf("get all: %d %s", w.Code, w.Body)
	}
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"PUT", "/v1/demo/faults/" + modelPrimary, `{"mode":"explode"}`, 400},
		{"PUT", "/v1/demo/faults/" + modelPrimary, `{"mode":"latency","delay":"-1s"}`, 400},
		// A bare number would be nanoseconds: 5 means 5ns, never what is meant.
		{"PUT", "/v1/demo/faults/" + modelPrimary, `{"mode":"latency","delay":5}`, 400},
		{"PUT", "/v1/demo/faults/" + modelPrimary, `{"mode":"rate_limit","retry_after":2}`, 400},
		{"PUT", "/v1/demo/faults/" + modelFallback, `{"mode":"latency","delay":"5ms"}`, 200},
		{"PUT", "/v1/demo/faults/no-such-model", `{"mode":"hang"}`, 404},
		{"GET", "/v1/demo/faults/" + modelPrimary, "", 200},
		{"DELETE", "/v1/demo/faults/" + modelPrimary, "", 200},
		{"DELETE", "/v1/demo/faults", "", 200},
	} {
		if w := h.do(tc.method, tc.path, tc.body); w.Code != tc.status {
			t.Errorf("%s %s %s: %d %s", tc.method, tc.path, tc.body, w.Code, w.Body)
		}
	}
	if f := h.up.Fault(modelPrimary); f.Mode != llmtest.ModeOK {
		t.Errorf("fault %+v after delete", f)
	}
}

// TestOpenAIClient points the go-openai SDK at the server.
func TestOpenAIClient(t *testing.T) {
	h := newHarness(t, harnessOptions{api: func(c *Config) { c.Keys = map[string]string{"sk-acme": "acme"} }})
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	cfg := openai.DefaultConfig("sk-acme")
	cfg.BaseURL = ts.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)
	ctx := context.Background()

	resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model: "anything",
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "You are helpful."},
			{Role: openai.ChatMessageRoleUser, Content: "How do I return an item?"},
		},
		User: "session-7",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || !strings.HasPrefix(resp.Choices[0].Message.Content, "["+modelPrimary+"] ") ||
		resp.Choices[0].Message.Role != openai.ChatMessageRoleAssistant || resp.Model != modelPrimary {
		t.Fatalf("response %+v", resp)
	}
	if resp.Header().Get(HeaderSource) != "primary" || resp.Usage.TotalTokens == 0 {
		t.Errorf("source header %q usage %+v", resp.Header().Get(HeaderSource), resp.Usage)
	}

	// The ragfuse field, read raw, says how the answer was made.
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"How long do refunds take?"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-acme")
	req.Header.Set("Accept-Language", "en")
	raw, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Body.Close()
	var cc ChatCompletion
	if err := json.NewDecoder(raw.Body).Decode(&cc); err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get(HeaderSource) != "fallback" || cc.Ragfuse.Source != tiers.SourceFallback || !cc.Ragfuse.Degraded ||
		!cc.Ragfuse.Actions.Refresh || cc.Ragfuse.Note == "" || cc.Ragfuse.RequestID != raw.Header.Get(HeaderRequestID) {
		t.Fatalf("ragfuse field %+v header %q", cc.Ragfuse, raw.Header.Get(HeaderSource))
	}

	// Errors reach the SDK as API errors.
	_, err = client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: ""}}})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || apiErr.Code != CodeEmptyQuestion {
		t.Fatalf("empty question through the SDK: %v", err)
	}
}

// serveLoopback serves srv on a loopback port until cancel; served gets
// Serve's result.
func serveLoopback(t *testing.T, srv *Server) (url string, cancel context.CancelFunc, served <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, l) }()
	return "http://" + l.Addr().String(), cancel, errc
}

// TestGracefulShutdown starts a slow question, cancels the server's
// context, and checks the question still gets its answer while new
// connections are refused.
func TestGracefulShutdown(t *testing.T) {
	reached := make(chan struct{}, 10)
	h := newHarness(t, harnessOptions{upstream: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/chat/completions" {
				reached <- struct{}{}
			}
			next.ServeHTTP(w, r)
		})
	}})
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeLatency, Delay: 300 * time.Millisecond})
	url, cancel, served := serveLoopback(t, h.srv)

	answered := make(chan int, 1)
	go func() {
		resp, err := http.Post(url+"/v1/ask", "application/json", strings.NewReader(`{"question":"How do I return an item?"}`))
		if err != nil {
			answered <- -1
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	// Wait until the question reached the upstream, then shut down.
	<-reached
	cancel()
	if code := <-answered; code != http.StatusOK {
		t.Fatalf("in-flight question: status %d", code)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Fatal("the server still accepts connections")
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestDrainDelay: with server.drain_delay, a stopping server answers
// /readyz with 503 and still serves questions for that long, so that a load
// balancer polling /readyz stops routing to it before its listener closes.
func TestDrainDelay(t *testing.T) {
	const delay = 300 * time.Millisecond
	h := newHarness(t, harnessOptions{config: func(c *config.Config) { c.Server.DrainDelay = delay }})
	url, cancel, served := serveLoopback(t, h.srv)
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get(url + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz before the stop: %v %v", resp, err)
	}
	resp.Body.Close()

	stopped := time.Now()
	cancel()
	for code := 0; code != http.StatusServiceUnavailable; { // until Serve has seen the stop
		resp, err = c.Get(url + "/readyz")
		if err != nil || time.Since(stopped) > delay {
			t.Fatalf("readyz while draining: %v (last status %d), want 503", err, code)
		}
		code = resp.StatusCode
		resp.Body.Close()
	}
	resp, err = c.Post(url+"/v1/ask", "application/json", strings.NewReader(`{"question":"How do I return an item?"}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a question while draining: %v %v, want 200", resp, err)
	}
	resp.Body.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if took := time.Since(stopped); took < delay {
		t.Errorf("Serve returned %v after the stop, before the drain delay %v", took, delay)
	}
	c.CloseIdleConnections()
	if _, err := c.Get(url + "/healthz"); err == nil {
		t.Fatal("the server still accepts connections after the drain")
	}
}

// TestDrainClosesKeptAliveConnections guards the requests of clients on
// kept-alive connections during a drain: from the stop on, every response
// carries Connection: close and no connection is reused, so clients move
// to new connections (another instance, behind a load balancer) before the
// listener closes, instead of losing requests sent on a connection the
// shutdown then closes.
func TestDrainClosesKeptAliveConnections(t *testing.T) {
	const delay = 500 * time.Millisecond
	h := newHarness(t, harnessOptions{config: func(c *config.Config) { c.Server.DrainDelay = delay }})
	url, cancel, served := serveLoopback(t, h.srv)
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	var reused atomic.Int32
	post := func() (*http.Response, error) {
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			if i.Reused {
				reused.Add(1)
			}
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
			http.MethodPost, url+"/v1/ask", strings.NewReader(`{"question":"How do I return an item?"}`))
		req.Header.Set("Content-Type", "application/json")
		return c.Do(req)
	}
	resp, err := post()
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("before the stop: %v %v (close %v), want a kept-alive 200", resp, err, resp != nil && resp.Close)
	}
	resp.Body.Close()

	stopped := time.Now()
	cancel()
	for !h.srv.draining.Load() {
		time.Sleep(time.Millisecond)
	}
	reused.Store(0)
	for i := 0; time.Since(stopped) < delay*3/5; i++ {
		resp, err := post()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("question %d while draining: %v %v", i, resp, err)
		}
		resp.Body.Close()
		if !resp.Close { // net/http sets Close from Connection: close
			t.Fatalf("question %d while draining: no Connection: close", i)
		}
	}
	if n := reused.Load(); n != 0 {
		t.Errorf("%d requests reused a connection during the drain", n)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestMetricsHedge: a hedged primary that has not answered after
// hedge_after is joined by the fallback, which answers; the response's
// attempts show the primary's call as hedged and /metrics counts the
// hedge as won.
func TestMetricsHedge(t *testing.T) {
	h := newHarness(t, harnessOptions{config: func(c *config.Config) {
		c.Tiers[1].LLM.HedgeAfter = 100 * time.Millisecond
	}})
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeHang})
	a := h.ask("How do I return an item?")
	var got []string
	for _, at := range a.Attempts {
		got = append(got, at.Tier+":"+at.Outcome)
	}
	if a.Source != "fallback" || strings.Join(got, " ") != "cache:miss fallback:success primary:hedged" {
		t.Fatalf("answered by %s, attempts %v", a.Source, got)
	}
	scrape(t, h,
		`ragfuse_hedges_total{tier="primary",won="true"} 1`,
		`ragfuse_attempts_total{model="test-primary",outcome="hedged",tier="primary"} 1`)
	// The cancelled call's prompt, which no usage reported, is estimated
	// and wasted.
	body := h.do(http.MethodGet, "/metrics", "").Body.String()
	if !strings.Contains(body, `ragfuse_tokens_wasted_total{model="test-primary",tier="primary"} `) {
		t.Errorf("no wasted tokens for the hedged call:\n%s", body)
	}
}
