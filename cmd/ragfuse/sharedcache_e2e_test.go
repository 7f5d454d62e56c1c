package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// e2eCacheConfig is a cache -> primary -> static chain sharing its cache
// through Redis; UPSTREAM, REDIS, PREFIX and KB are replaced.
const e2eCacheConfig = `
server: {request_timeout: 3s}
models:
  big: {base_url: "UPSTREAM", model: big}
knowledge_base: {path: "KB"}
redis: {url: "REDIS", prefix: "PREFIX", op_timeout: 500ms}
tiers:
  - {name: cache, kind: semantic_cache}
  - {name: primary, kind: llm, models: [big], timeout: 1s}
  - {name: static, kind: static, message: "sorry"}
`

// sharedCache is the sharing status of a process's cache tier.
type sharedCache struct {
	Healthy, Loading bool
	Loads, Loaded    int
	Received         uint64
}

func (p *serveProc) sharedCache(t *testing.T) sharedCache {
	t.Helper()
	resp, err := http.Get(p.url + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Caches []struct {
			Tier   string
			Shared *sharedCache
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Caches {
		if c.Tier == "cache" && c.Shared != nil {
			return *c.Shared
		}
	}
	t.Fatalf("no shared cache in the status")
	return sharedCache{}
}

// waitProc polls cond every 5ms for at most d.
func waitProc(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServeSharesTheCacheThroughRedis runs three `ragfuse serve` processes
// on one Redis: an answer stored through A is a cache hit on B and C, and
// a process started afterwards serves it before any model call.
func TestServeSharesTheCacheThroughRedis(t *testing.T) {
	bin, config, srv := buildE2E(t, e2eCacheConfig)
	procs := []*serveProc{startServe(t, bin, config), startServe(t, bin, config), startServe(t, bin, config)}
	for _, p := range procs {
		waitProc(t, 5*time.Second, "the first load", func() bool { sh := p.sharedCache(t); return sh.Loads > 0 && !sh.Loading })
	}
	a, b, c := procs[0], procs[1], procs[2]
	if src := a.ask(t, "How do I return an item?"); src != "primary" {
		t.Fatalf("A answered from %s", src)
	}
	stored := time.Now()
	for _, p := range []*serveProc{b, c} {
		waitProc(t, time.Second, "A's answer on another process", func() bool { return p.sharedCache(t).Received == 1 })
	}
	t.Logf("A's answer reached B and C within %v (status polled over HTTP)", time.Since(stored))
	calls := srv.Stats("big").Calls
	for _, p := range []*serveProc{b, c} {
		if src := p.ask(t, "How do I return an item?"); src != "cache" {
			t.Fatalf("answered from %s", src)
		}
	}
	d := startServe(t, bin, config)
	waitProc(t, 5*time.Second, "the new process's load", func() bool { sh := d.sharedCache(t); return sh.Loads > 0 && !sh.Loading })
	if sh := d.sharedCache(t); sh.Loaded != 1 || !sh.Healthy {
		t.Fatalf("the new process's sharing: %+v\n%s", sh, d.output())
	}
	if src := d.ask(t, "How do I return an item?"); src != "cache" {
		t.Fatalf("the new process answered from %s", src)
	}
	if got := srv.Stats("big").Calls; got != calls {
		t.Fatalf("%d model calls after A's answer, want none", got-calls)
	}
	if !strings.Contains(d.output(), "shared cache: loaded live entries") {
		t.Fatalf("the new process's log does not report its load:\n%s", d.output())
	}
}
