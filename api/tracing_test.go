package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
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
