package config

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// clusterConfig is a cache -> primary -> fallback -> retrieval -> static
// chain over the knowledge base in KB, sharing Redis; UPSTREAM, REDIS,
// PREFIX and KB are replaced.
const clusterConfig = `
server: {request_timeout: 3s}
models:
  big:   {base_url: "UPSTREAM", model: big}
  small: {base_url: "UPSTREAM", model: small}
knowledge_base: {path: "KB"}
redis: {url: "REDIS", prefix: "PREFIX", op_timeout: 500ms}
tiers:
  # shared: false: each instance asks the model itself, so that the model
  # calls the tests count are those of the cooldowns and reloads
  - {name: cache, kind: semantic_cache, embedder: hash, shared: false}
  - {name: primary, kind: llm, models: [big], timeout: 1s, context_docs: 1}
  - {name: fallback, kind: llm, models: [small], timeout: 1s, context_docs: 1}
  - {name: retrieval, kind: retrieval}
  - {name: static, kind: static, message: "sorry"}
`

// shareDelay is the most a cooldown or its end may take to reach the
// other instances.
const shareDelay = 100 * time.Millisecond

// kbCluster is n pipelines built from clusterConfig on one clock, one
// upstream and one knowledge-base folder.
type kbCluster struct {
	srv *llmtest.Server
	clk *clock.Manual
	dir string
	ps  []*pipeline.Pipeline
}

func newKBCluster(t testing.TB, n int, redisURL string) *kbCluster {
	t.Helper()
	c := &kbCluster{srv: llmtest.NewServer(llmtest.Config{}), clk: clock.NewManual(epoch), dir: t.TempDir()}
	t.Cleanup(c.srv.Close)
	c.writeKB(t, "Returns are accepted within 30 days.")
	cfg := mustParse(t, strings.NewReplacer("UPSTREAM", c.srv.URL, "REDIS", redisURL,
		"PREFIX", redistest.Prefix(t), "KB", filepath.ToSlash(c.dir)).Replace(clusterConfig))
	for i := range n {
		cfg.Redis.Instance = "node-" + strconv.Itoa(i)
		c.ps = append(c.ps, mustBuild(t, cfg, Env{Clock: c.clk, Getenv: noEnv}))
	}
	return c
}

// writeKB replaces the one article of the knowledge base.
func (c *kbCluster) writeKB(t testing.TB, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, "returns.md"), []byte("# Returns\n"+text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cooling returns until when p skips model, zero if it does not.
func cooling(p *pipeline.Pipeline, model string) time.Time {
	for _, c := range p.Status().Cooldowns {
		if c.Model == model {
			return c.Until
		}
	}
	return time.Time{}
}

// within polls cond every millisecond for at most d and returns how long
// it took to hold, failing t if it never did.
func within(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

func TestClusterCooldownSkipsTheModelEverywhere(t *testing.T) {
	redistest.Client(t)
	c := newKBCluster(t, 3, redistest.URL())
	a, b, cc := c.ps[0], c.ps[1], c.ps[2]
	c.srv.SetFault("big", llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: 30 * time.Second})
	if res := ask(t, a, "q0"); res.Source != tiers.SourceFallback || !strings.Contains(strings.Join(outcomes(res), " "), "big:rate_limited") {
		t.Fatalf("A: %v", outcomes(res))
	}
	until := c.clk.Now().Add(30 * time.Second)
	for _, p := range []*pipeline.Pipeline{b, cc} {
		d := within(t, shareDelay, "the cooldown reaching another instance", func() bool { return cooling(p, "big").Equal(until) })
		t.Logf("cooldown seen after %v", d)
	}

	// B and C skip the model without a call, until the same instant.
	c.srv.ResetStats()
	for _, p := range []*pipeline.Pipeline{b, cc} {
		if res := ask(t, p, "q1"); res.Source != tiers.SourceFallback || res.Attempts[1].Outcome != "cooling_down" {
			t.Fatalf("while cooling down: %v", outcomes(res))
		}
	}
	if n := c.srv.Stats("big").Calls; n != 0 {
		t.Fatalf("%d calls reached the cooling model", n)
	}
	c.srv.ClearFault("big")
	c.clk.Advance(30*time.Second - time.Millisecond)
	for i, p := range c.ps {
		if cooling(p, "big").IsZero() {
			t.Fatalf("instance %d: cooldown over 1ms early", i)
		}
	}
	c.clk.Advance(time.Millisecond)
	for i, p := range c.ps {
		if res := ask(t, p, "q2"); res.Source != tiers.SourcePrimary {
			t.Fatalf("instance %d after the cooldown: %v", i, outcomes(res))
		}
	}
}

func TestClusterResetEndsTheCooldownEverywhere(t *testing.T) {
	redistest.Client(t)
	c := newKBCluster(t, 3, redistest.URL())
	a, b, cc := c.ps[0], c.ps[1], c.ps[2]
	c.srv.SetFault("big", llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: time.Hour})
	ask(t, a, "q0")
	for _, p := range []*pipeline.Pipeline{b, cc} {
		within(t, shareDelay, "the cooldown reaching another instance", func() bool { return !cooling(p, "big").IsZero() })
	}
	c.srv.ClearFault("big")
	b.EndCooldown("big") // what POST /v1/admin/breakers/reset does for model/big
	for _, p := range []*pipeline.Pipeline{a, cc} {
		d := within(t, shareDelay, "the end reaching another instance", func() bool { return cooling(p, "big").IsZero() })
		t.Logf("end seen after %v", d)
		if res := ask(t, p, "q1"); res.Source != tiers.SourcePrimary {
			t.Fatalf("after the reset: %v", outcomes(res))
		}
	}
}

func TestClusterReloadReachesEveryInstance(t *testing.T) {
	redistest.Client(t)
	c := newKBCluster(t, 3, redistest.URL())
	a, cc := c.ps[0], c.ps[2]
	if res := ask(t, a, "how do returns work"); res.Source != tiers.SourcePrimary {
		t.Fatalf("A first: %v", outcomes(res))
	}
	if res := ask(t, a, "how do returns work"); res.Source != tiers.SourceCache {
		t.Fatalf("A again: %v, want a cache hit", outcomes(res))
	}
	within(t, 2*time.Second, "three instances in the cluster status", func() bool {
		st := a.ClusterStatus(context.Background())
		return st != nil && len(st.Instances) == 3 && st.Agree
	})

	c.writeKB(t, "Returns are accepted within 14 days.")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	r, err := cc.ReloadCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster reload complete after %v", time.Since(start))
	if !r.Complete || len(r.Members) != 3 || r.Version != 2 {
		t.Fatalf("reload %+v, want complete on 3 instances at version 2", r)
	}
	for i, p := range c.ps {
		if v := p.Status().KnowledgeBase.Version; v != 2 {
			t.Fatalf("instance %d at version %d after the reload, want 2", i, v)
		}
	}
	st := a.ClusterStatus(context.Background())
	if len(st.Instances) != 3 || !st.Agree || st.Instances[0].Digest != r.Digest {
		t.Fatalf("cluster after the reload: %+v, want 3 instances on digest %s", st, r.Digest)
	}
	self := 0
	for i, m := range st.Instances {
		if m.ReloadID != r.ID || m.Version != 2 {
			t.Fatalf("member %+v did not run reload %s", m, r.ID)
		}
		if want := "node-" + strconv.Itoa(i); m.Instance != want { // redis.instance
			t.Fatalf("member %d is %q, want %q", i, m.Instance, want)
		}
		if m.Self {
			self++
		}
	}
	if self != 1 || !st.Instances[0].Self {
		t.Fatalf("%d members marked self, want 1", self)
	}
	// The answer built on the old version is not served on A any more.
	if res := ask(t, a, "how do returns work"); res.Source != tiers.SourcePrimary {
		t.Fatalf("A after the reload: %v, want no cache hit", outcomes(res))
	}
}

func TestClusterWithRedisKilled(t *testing.T) {
	srv := redistest.StartServer(t)
	c := newKBCluster(t, 3, srv.URL())
	a, b, cc := c.ps[0], c.ps[1], c.ps[2]
	srv.Kill()
	within(t, 5*time.Second, "every instance to notice the outage", func() bool {
		for _, p := range c.ps {
			if p.Status().Store.Healthy {
				return false
			}
		}
		return true
	})

	// Local cooldowns keep working and no question fails or waits on Redis.
	c.srv.SetFault("big", llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: time.Hour})
	start := time.Now()
	for i := range 20 {
		for _, p := range c.ps {
			if res := ask(t, p, "q"+string(rune('a'+i))); res.Source != tiers.SourceFallback {
				t.Fatalf("during the outage: %v", outcomes(res))
			}
		}
	}
	t.Logf("60 questions during the outage in %v", time.Since(start))
	if n := c.srv.Stats("big").Calls; n != 3 {
		t.Fatalf("%d calls reached the rate-limited model, want one per instance", n)
	}
	c.writeKB(t, "Returns are accepted within 14 days.")
	r, err := cc.ReloadCluster(context.Background())
	if err != nil || r.Complete || r.Error == "" || r.Version != 2 {
		t.Fatalf("reload during the outage: %+v, %v; want a local reload and the error", r, err)
	}
	if st := a.ClusterStatus(context.Background()); st.Error == "" {
		t.Fatalf("cluster status during the outage: %+v, want the error", st)
	}

	// Back: the instances' states are written again, and a reset spreads.
	srv.Start()
	within(t, 10*time.Second, "every instance to see three members again", func() bool {
		st := a.ClusterStatus(context.Background())
		return st.Error == "" && len(st.Instances) == 3
	})
	if st := a.ClusterStatus(context.Background()); st.Agree {
		t.Fatalf("cluster %+v agrees, but only C reloaded during the outage", st)
	}
	c.srv.ClearFault("big")
	b.EndCooldown("big")
	within(t, 2*time.Second, "the reset to reach A and C", func() bool {
		return cooling(a, "big").IsZero() && cooling(cc, "big").IsZero()
	})
}

// BenchmarkClusterReload measures a cluster-wide reload of three
// instances: one op is ReloadCluster on one of them until every instance
// reported the reload (each rereading a one-article knowledge base).
func BenchmarkClusterReload(b *testing.B) {
	redistest.Client(b)
	c := newKBCluster(b, 3, redistest.URL())
	for range 200 {
		if st := c.ps[0].ClusterStatus(context.Background()); st != nil && len(st.Instances) == 3 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := 0; b.Loop(); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := c.ps[i%3].ReloadCluster(ctx)
		cancel()
		if err != nil || !r.Complete || len(r.Members) != 3 {
			b.Fatalf("reload %+v, %v", r, err)
		}
	}
}
