package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// collector is an OTLP/HTTP endpoint that keeps the bodies posted to
// /v1/traces.
type collector struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		c.mu.Lock()
		c.bodies = append(c.bodies, b)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(c.Close)
	return c
}

// received reports whether a posted body holds every part.
func (c *collector) received(parts ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.bodies {
		all := true
		for _, p := range parts {
			all = all && bytes.Contains(b, []byte(p))
		}
		if all {
			return true
		}
	}
	return false
}

func TestNewTracerProviderOff(t *testing.T) {
	tp, err := NewTracerProvider(context.Background(), Tracing{}, func(string) string { return "" })
	if tp != nil || err != nil {
		t.Fatalf("no endpoint: provider %v, error %v; want tracing off", tp, err)
	}
	for _, bad := range []Tracing{{OTLPEndpoint: "collector:4318"}, {OTLPEndpoint: "ftp://x"},
		{OTLPEndpoint: "http://x", SampleRatio: 1.5}, {OTLPEndpoint: "http://x", SampleRatio: -1}} {
		if _, err := NewTracerProvider(context.Background(), bad, nil); !errors.Is(err, ErrTracing) {
			t.Errorf("%+v: error %v, want ErrTracing", bad, err)
		}
	}
}

// TestNewTracerProviderExports sends a span to a collector named by the
// configuration, then by the standard environment variable.
func TestNewTracerProviderExports(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(url string) Tracing
		env  bool
	}{
		{"otlp_endpoint", func(url string) Tracing { return Tracing{OTLPEndpoint: url, ServiceName: "ragfuse-test"} }, false},
		{envOTLPEndpoint, func(string) Tracing { return Tracing{ServiceName: "ragfuse-test"} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector(t)
			if tc.env {
				t.Setenv(envOTLPEndpoint, c.URL)
			}
			tp, err := NewTracerProvider(context.Background(), tc.cfg(c.URL), os.Getenv)
			if err != nil || tp == nil {
				t.Fatalf("provider %v, error %v", tp, err)
			}
			_, span := tp.Tracer("test").Start(context.Background(), "question")
			span.End()
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !c.received("ragfuse-test", "question") {
				t.Fatalf("the collector got no span of service ragfuse-test (%d posts)", len(c.bodies))
			}
		})
	}
}

// traced is a harness whose pipeline and server record their spans in
// an in-memory exporter, with a primary that hangs past its 200ms
// timeout, and an upstream that records the traceparent each model call
// carries (by model).
func traced(t *testing.T) (*harness, *tracetest.InMemoryExporter, func() map[string]string) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var mu sync.Mutex
	parents := map[string]string{}
	h := newHarness(t, harnessOptions{
		tracer: tp.Tracer("ragfuse"),
		config: func(c *config.Config) { c.Tiers[1].Timeout = 200 * time.Millisecond },
		upstream: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				var req struct{ Model string }
				_ = json.Unmarshal(b, &req)
				mu.Lock()
				parents[req.Model] = r.Header.Get("traceparent")
				mu.Unlock()
				r.Body = io.NopCloser(bytes.NewReader(b))
				next.ServeHTTP(w, r)
			})
		},
	})
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeHang})
	return h, exp, func() map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(parents)
	}
}

// spanTree indexes spans by name (each name once) and checks parents.
type spanTree map[string]tracetest.SpanStub

func treeOf(t *testing.T, spans tracetest.SpanStubs) spanTree {
	t.Helper()
	tree := spanTree{}
	for _, s := range spans {
		if _, dup := tree[s.Name]; dup {
			t.Fatalf("two spans named %s", s.Name)
		}
		tree[s.Name] = s
	}
	return tree
}

func (tree spanTree) attr(name string, key attribute.Key) attribute.Value {
	for _, kv := range tree[name].Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestTracingSpanTree asks a question the fallback answers after the
// primary's timeout, with a traceparent: the question span continues the
// caller's trace, the tiers' spans are its children and the model calls'
// spans theirs, with their outcomes and tokens, and each model call sends
// its own span as the traceparent the upstream receives.
func TestTracingSpanTree(t *testing.T) {
	h, exp, parents := traced(t)
	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	body, _ := json.Marshal(map[string]string{"question": "How long do refunds take?", "tenant_id": "acme"})
	w := h.do(http.MethodPost, "/v1/ask", string(body), "traceparent", caller)
	var a AskResponse
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || a.Source != "fallback" {
		t.Fatalf("ask: %d %s", w.Code, w.Body)
	}
	tree := treeOf(t, exp.GetSpans())
	for _, name := range []string{"question", "tier/cache", "tier/primary", "tier/fallback", "model/" + modelPrimary, "model/" + modelFallback} {
		if _, ok := tree[name]; !ok {
			t.Fatalf("no span %s in %v", name, slices.Collect(maps.Keys(tree)))
		}
	}
	q := tree["question"]
	if got := q.SpanContext.TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("question's trace %s, want the caller's", got)
	}
	if !q.Parent.IsRemote() || q.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("question's parent %v, want the caller's span", q.Parent)
	}
	for name, parent := range map[string]string{"tier/cache": "question", "tier/primary": "question", "tier/fallback": "question",
		"model/" + modelPrimary: "tier/primary", "model/" + modelFallback: "tier/fallback"} {
		if got, want := tree[name].Parent.SpanID(), tree[parent].SpanContext.SpanID(); got != want {
			t.Errorf("%s's parent is %s, want %s (%s)", name, got, parent, want)
		}
	}
	for _, c := range []struct {
		span string
		key  attribute.Key
		want any
	}{
		{"question", AttrTenant, "acme"}, {"question", AttrRequestID, a.RequestID},
		{"question", pipeline.AttrSource, "fallback"}, {"question", AttrDegraded, true},
		{"tier/cache", pipeline.AttrOutcome, "miss"},
		{"tier/primary", pipeline.AttrOutcome, "timeout"}, {"tier/fallback", pipeline.AttrOutcome, "success"},
		{"model/" + modelPrimary, pipeline.AttrOutcome, "timeout"}, {"model/" + modelPrimary, pipeline.AttrModel, modelPrimary},
		{"model/" + modelFallback, pipeline.AttrOutcome, "success"},
	} {
		if got := tree.attr(c.span, c.key).AsInterface(); got != c.want {
			t.Errorf("%s %s = %v, want %v", c.span, c.key, got, c.want)
		}
	}
	if n := tree.attr("model/"+modelFallback, pipeline.AttrOutputTokens).AsInt64(); n <= 0 {
		t.Errorf("fallback call's output tokens %d", n)
	}
	if s := tree["tier/primary"].Status; s.Code != codes.Error {
		t.Errorf("tier/primary's status %+v, want an error", s)
	}
	if s := tree["model/"+modelFallback].Status; s.Code == codes.Error {
		t.Errorf("the fallback call's status %+v", s)
	}
	got := parents()
	for _, m := range []string{modelPrimary, modelFallback} {
		sc := tree["model/"+m].SpanContext
		if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; got[m] != want {
			t.Errorf("upstream call of %s carried traceparent %q, want %q", m, got[m], want)
		}
	}
}

// TestTracingStartsATrace: a question without a traceparent starts a
// trace of its own, whose spans the streamed route records alike.
func TestTracingStartsATrace(t *testing.T) {
	h, exp, _ := traced(t)
	w := h.do(http.MethodPost, "/v1/ask/stream", `{"question":"How do I return an item?"}`)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "event: done") {
		t.Fatalf("stream: %d %s", w.Code, w.Body)
	}
	tree := treeOf(t, exp.GetSpans())
	q, ok := tree["question"]
	if !ok || q.Parent.IsValid() {
		t.Fatalf("question span %+v, want a root", q)
	}
	if tree.attr("question", pipeline.AttrSource).AsString() != "fallback" {
		t.Errorf("streamed question's source %v", tree.attr("question", pipeline.AttrSource))
	}
	if tree["tier/fallback"].Parent.SpanID() != q.SpanContext.SpanID() {
		t.Error("tier/fallback is not a child of the streamed question")
	}
}
