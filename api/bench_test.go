package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// BenchmarkAskCacheHit measures POST /v1/ask answered by the semantic
// cache through the full stack (echo, middleware, auth, decoding, the
// pipeline, notes, JSON), beside a bare echo handler that returns a fixed
// JSON body of the same size: the ratio is ragfuse's own overhead on the
// fastest path.
//
//	go test -run '^$' -bench BenchmarkAskCacheHit -benchmem ./api/
func BenchmarkAskCacheHit(b *testing.B) {
	// Logs are formatted as in production (one JSON line per question)
	// and discarded.
	h := newHarness(b, harnessOptions{logTo: io.Discard,
		api: func(c *Config) { c.Keys = map[string]string{"sk-bench": "bench"} }})
	const body = `{"question":"How do I return an item?","session_id":"s-1"}`
	send := func(handler http.Handler) *httptest.ResponseRecorder {
		// A request's context ends when its client goes away, as
		// net/http's server makes it.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/ask", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-bench")
		req.Header.Set("Accept-Language", "en")
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		return w
	}
	// Warm the cache, then check that the benchmarked path is a hit.
	if w := send(h.srv.Handler()); w.Code != http.StatusOK {
		b.Fatalf("warm-up: %d %s", w.Code, w.Body)
	}
	hit := send(h.srv.Handler())
	if !strings.Contains(hit.Body.String(), `"source":"cache"`) {
		b.Fatalf("not a cache hit: %s", hit.Body)
	}
	fixed := hit.Body.Bytes()

	bare := echo.New()
	bare.POST("/v1/ask", func(c echo.Context) error { return c.JSONBlob(http.StatusOK, fixed) })

	b.Run("ragfuse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if w := send(h.srv.Handler()); w.Code != http.StatusOK {
				b.Fatal(w.Code)
			}
		}
	})
	b.Run("bare-echo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if w := send(bare); w.Code != http.StatusOK {
				b.Fatal(w.Code)
			}
		}
	})
}
