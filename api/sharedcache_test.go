package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/config"
)

func TestStatusAndMetricsOfASharedCache(t *testing.T) {
	redistest.Client(t)
	h := newHarness(t, harnessOptions{config: func(c *config.Config) {
		c.Redis = config.Redis{URL: redistest.URL(), Prefix: redistest.Prefix(t), OpTimeout: 500 * time.Millisecond}
	}})
	h.ask("How do I return an item?")
	var st StatusResponse
	deadline := time.Now().Add(5 * time.Second)
	for {
		w := h.do(http.MethodGet, "/v1/status", "")
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != http.StatusOK {
			t.Fatalf("%d %s: %v", w.Code, w.Body, err)
		}
		if sh := st.Caches[0].Shared; sh != nil && sh.Written == 1 && sh.Loads == 1 && !sh.Loading {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status: %+v", st.Caches)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if sh := st.Caches[0]; sh.Shared.Kind != "redis" || !sh.Shared.Healthy || sh.Shared.Queued != 0 || sh.Entries != 1 {
		t.Fatalf("cache status %+v %+v", sh, sh.Shared)
	}
	body := h.do(http.MethodGet, "/metrics", "").Body.String()
	for _, want := range []string{
		`ragfuse_cache_shared_healthy{tier="cache"} 1`,
		`ragfuse_cache_shared_queued{tier="cache"} 0`,
		`ragfuse_cache_shared_dropped_total{tier="cache"} 0`,
		`ragfuse_cache_shared_written_total{tier="cache"} 1`,
		`ragfuse_cache_shared_received_total{tier="cache"} 0`,
		`ragfuse_cache_shared_loads_total{tier="cache"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestLocalCacheHasNoSharedStatus(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	w := h.do(http.MethodGet, "/v1/status", "")
	if strings.Contains(w.Body.String(), `"shared"`) {
		t.Fatalf("a local cache reports sharing: %s", w.Body)
	}
	if body := h.do(http.MethodGet, "/metrics", "").Body.String(); strings.Contains(body, "ragfuse_cache_shared_") {
		t.Fatal("a local cache exports sharing metrics")
	}
}
