package config

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/pipeline"
)

// probeUpstream is an OpenAI-compatible service (chat, embeddings,
// rerank) that answers, or fails with 503 while down, and records the
// probe requests it gets: one-token completions, and every embedding and
// rerank request.
type probeUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	down   bool
	probes []probeHit
}

type probeHit struct {
	path string
	at   time.Time
}

func newProbeUpstream(t *testing.T) *probeUpstream {
	u := &probeUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *probeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		MaxTokens int `json:"max_tokens"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	u.mu.Lock()
	down := u.down
	if body.MaxTokens == 1 || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		u.probes = append(u.probes, probeHit{path: r.URL.Path, at: time.Now()})
	}
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if down {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/embeddings"):
		_, _ = io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.5]}]}`)
	case strings.HasSuffix(r.URL.Path, "/rerank"):
		_, _ = io.WriteString(w, `{"results":[{"index":0,"relevance_score":0.9}]}`)
	default:
		_, _ = io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}
}

func (u *probeUpstream) setDown(down bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.down = down
}

func (u *probeUpstream) hits() []probeHit {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]probeHit(nil), u.probes...)
}

// TestBuildWiresProbes: each model with a probe: section gets a prober
// sending the smallest request of its kind, with the defaults filled in.
func TestBuildWiresProbes(t *testing.T) {
	up := newProbeUpstream(t)
	cfg := mustParse(t, strings.ReplaceAll(`
models:
  chat:  {base_url: "UP/v1", probe: {interval: 50ms, timeout: 50ms}}
  embed: {base_url: "UP/v1", kind: embedding, probe: {interval: 50ms, timeout: 50ms}}
  rank:  {base_url: "UP/v1", kind: rerank, probe: {interval: 50ms, timeout: 50ms}}
  other: {base_url: "UP/v1", probe: {}}
  plain: {base_url: "UP/v1"}
tiers: [{kind: llm, models: [chat, other, plain]}, {kind: static}]
`, "UP", up.URL))
	clk := clock.NewManual(epoch)
	p := mustBuild(t, cfg, Env{Clock: clk, Getenv: noEnv})
	st := p.Status().Probes
	if len(st) != 4 || st[0].Model != "chat" || st[3].Model != "rank" || st[2].Model != "other" ||
		st[2].Interval != pipeline.DefaultProbeInterval || st[2].Timeout != pipeline.DefaultProbeTimeout {
		t.Fatalf("probe status = %+v, want chat, embed, other (defaults), rank", st)
	}
	for _, id := range []string{"chat", "embed", "rank"} {
		p.Breakers().Get("model/" + id).Trip()
	}
	clk.Advance(time.Hour) // every open time is over
	for _, id := range []string{"chat", "embed", "rank"} {
		b := p.Breakers().Get("model/" + id)
		waitFor(t, 5*time.Second, "model/"+id+" closed by its probe", func() bool { return b.State() == breaker.StateClosed })
	}
	paths := map[string]int{}
	for _, h := range up.hits() {
		paths[h.path]++
	}
	if paths["/v1/chat/completions"] != 1 || paths["/v1/embeddings"] != 1 || paths["/v1/rerank"] != 1 {
		t.Fatalf("probe requests by path = %v, want one of each kind", paths)
	}
	if b := p.Breakers().Get("model/plain"); b.Config().ActiveProbes {
		t.Fatal("a model without probe: leaves its probes to the prober")
	}
}

// TestProbeOncePerPeriodInCluster: two instances sharing breaker state in
// Redis probe a model that is down through one lease: the probe requests
// reaching it are one per open period for the whole cluster, and one
// successful probe closes the breaker on both.
func TestProbeOncePerPeriodInCluster(t *testing.T) {
	redistest.Client(t)
	up := newProbeUpstream(t)
	up.setDown(true)
	const period = 300 * time.Millisecond
	cfg := mustParse(t, strings.NewReplacer("UP", up.URL, "REDIS", redistest.URL(), "PREFIX", redistest.Prefix(t)).Replace(`
server: {request_timeout: 2s}
models:
  big: {base_url: "UP/v1", probe: {interval: 300ms, timeout: 200ms}}
redis: {url: "REDIS", prefix: "PREFIX", op_timeout: 500ms}
tiers:
  - {name: primary, kind: llm, models: [big], timeout: 1s, breaker: {failure_threshold: 2, open_duration: 300ms}}
  - {name: static, kind: static, message: "sorry"}
`))
	ps := []*pipeline.Pipeline{mustBuild(t, cfg, Env{Getenv: noEnv}), mustBuild(t, cfg, Env{Getenv: noEnv})}
	bs := []*breaker.Breaker{ps[0].Breakers().Get("model/big"), ps[1].Breakers().Get("model/big")}
	bs[0].Trip() // as two failed questions would; the trip reaches the other instance through Redis
	for i, b := range bs {
		waitFor(t, 5*time.Second, "the trip on every instance", func() bool { return b.State() != breaker.StateClosed })
		_ = i
	}
	start := time.Now()
	time.Sleep(6 * period)
	hits := up.hits()
	elapsed := time.Since(start)
	if max := int(elapsed/period) + 1; len(hits) < 2 || len(hits) > max {
		t.Fatalf("%d probe requests in %v of %v periods, want 2 to %d (one per period for the cluster)", len(hits), elapsed, period, max)
	}
	t.Logf("%d probe requests from 2 instances in %v (period %v)", len(hits), elapsed.Round(time.Millisecond), period)
	for i := 1; i < len(hits); i++ {
		if gap := hits[i].at.Sub(hits[i-1].at); gap < period/2 {
			t.Fatalf("probe requests %d and %d %v apart, within one period of %v", i-1, i, gap, period)
		}
	}
	up.setDown(false)
	for _, b := range bs {
		waitFor(t, 5*time.Second, "a probe to close the breaker on every instance", func() bool { return b.State() == breaker.StateClosed })
	}
	n := len(up.hits())
	time.Sleep(2 * period)
	if after := len(up.hits()); after != n || n-len(hits) > 2 {
		t.Fatalf("probe requests: %d while down, %d more to recover, %d after both closed; want 1 or 2, then none", len(hits), n-len(hits), after-n)
	}
}
