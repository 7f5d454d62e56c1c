package config

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// sharedConfig is a primary -> fallback -> static chain whose breaker
// state and rate limits live in Redis. UPSTREAM, REDIS, PREFIX and
// FAILURE_THRESHOLD are replaced by each test.
const sharedConfig = `
server: {request_timeout: 3s}
models:
  big:   {base_url: "UPSTREAM", model: big}
  small: {base_url: "UPSTREAM", model: small}
redis: {url: "REDIS", prefix: "PREFIX", op_timeout: 500ms}
rate_limit: {global_rps: 100000, tenant_rps: 100000}
tiers:
  - {name: primary, kind: llm, models: [big], timeout: 1s, context_docs: 1,
     breaker: {failure_threshold: FAILURE_THRESHOLD, window: 20, minimum_calls: 10, failure_rate: 0.5, open_duration: 30s}}
  - {name: fallback, kind: llm, models: [small], timeout: 1s, context_docs: 1}
  - {name: static, kind: static, message: "sorry"}
`

// instance is one pipeline of a simulated cluster, on its own clock.
type instance struct {
	p   *pipeline.Pipeline
	clk *clock.Manual
}

// sharedCluster builds n pipelines from sharedConfig (with replacements
// r, old/new pairs) sharing redisURL under one prefix and one upstream.
func sharedCluster(t *testing.T, n int, redisURL string, r ...string) (*llmtest.Server, []*instance) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	yaml := strings.NewReplacer(r...).Replace(sharedConfig)
	yaml = strings.NewReplacer("UPSTREAM", srv.URL, "REDIS", redisURL,
		"PREFIX", redistest.Prefix(t), "FAILURE_THRESHOLD", "2").Replace(yaml)
	cfg := mustParse(t, yaml)
	kb, err := retrieval.New(testDocs)
	if err != nil {
		t.Fatal(err)
	}
	var out []*instance
	for range n {
		in := &instance{clk: clock.NewManual(epoch)}
		in.p = mustBuild(t, cfg, Env{Clock: in.clk, KnowledgeBase: kb, Getenv: noEnv})
		if st := in.p.Status().Store; st.Kind != "redis" || !st.Healthy {
			t.Fatalf("store status %+v", st)
		}
		out = append(out, in)
	}
	return srv, out
}

func (in *instance) state(name string) breaker.State {
	b, ok := in.p.Breakers().Lookup(name)
	if !ok {
		return 255
	}
	return b.State()
}

// waitState polls every instance until breaker name is in state s, for at
// most 5s (pub/sub takes milliseconds; the margin is for loaded machines).
func waitState(t *testing.T, ins []*instance, name string, s breaker.State) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for i, in := range ins {
		for in.state(name) != s {
			if time.Now().After(deadline) {
				t.Fatalf("instance %d: %s is %v, want %v", i, name, in.state(name), s)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func askSource(t *testing.T, in *instance, q string) tiers.Source {
	t.Helper()
	res, err := in.p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: q})
	if err != nil {
		t.Fatalf("Ask(%q): %v", q, err)
	}
	return res.Source
}

func TestSharedClusterTripProbeRecover(t *testing.T) {
	redistest.Client(t)
	srv, ins := sharedCluster(t, 3, redistest.URL())
	a := ins[0]

	// The model fails on A: A's breaker opens, and B and C skip the model
	// without calling it.
	srv.SetFault("big", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
	for i := range 2 {
		if src := askSource(t, a, "a"+string(rune('0'+i))); src != tiers.SourceFallback {
			t.Fatalf("A answered from %s", src)
		}
	}
	waitState(t, ins, "model/big", breaker.StateOpen)
	srv.ResetStats()
	for i, in := range ins[1:] {
		res, err := in.p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: "b"})
		if err != nil || res.Source != tiers.SourceFallback || res.Attempts[0].Outcome != "breaker_open" {
			t.Fatalf("instance %d: %v %v", i+1, outcomes(res), err)
		}
	}
	if c := srv.Stats("big").Calls; c != 0 {
		t.Fatalf("%d calls reached the open model", c)
	}

	// The model is back (slowly, so that the probe is still running when
	// the others ask): exactly one instance in the cluster probes it.
	srv.SetFault("big", llmtest.Fault{Mode: llmtest.ModeLatency, Delay: 300 * time.Millisecond})
	for _, in := range ins {
		in.clk.Advance(30 * time.Second)
	}
	var wg sync.WaitGroup
	sources := make([]tiers.Source, len(ins))
	for i, in := range ins {
		wg.Go(func() { sources[i] = askSource(t, in, "probe") })
	}
	wg.Wait()
	if c := srv.Stats("big").Calls; c != 1 {
		t.Fatalf("%d probes reached the model, want 1 (sources %v)", c, sources)
	}
	primary := 0
	for _, s := range sources {
		if s == tiers.SourcePrimary {
			primary++
		}
	}
	if primary != 1 {
		t.Fatalf("sources %v, want one primary", sources)
	}

	// The probe closed the breaker everywhere: all three use the model.
	srv.ClearFault("big")
	waitState(t, ins, "model/big", breaker.StateClosed)
	waitState(t, ins, "tier/primary", breaker.StateClosed)
	for i, in := range ins {
		if src := askSource(t, in, "after"); src != tiers.SourcePrimary {
			t.Fatalf("instance %d answered from %s after recovery", i, src)
		}
	}
	if c := srv.Stats("big").Calls; c != 4 {
		t.Fatalf("%d calls after recovery, want 4", c)
	}
}

func TestSharedClusterAggregatesFailures(t *testing.T) {
	// minimum_calls 10 and no consecutive-failure rule: 4 failures of 4 on
	// each instance trip nobody alone, 12 of 12 in the cluster trip all.
	redistest.Client(t)
	srv, ins := sharedCluster(t, 3, redistest.URL(), "FAILURE_THRESHOLD", "100")
	srv.SetFault("big", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
	for i, in := range ins {
		for j := range 4 {
			askSource(t, in, "q"+string(rune('0'+i))+string(rune('0'+j)))
		}
		if i == 2 {
			break // its failures may trip the cluster before its fourth
		}
		// 8 failures at most in the cluster so far: nothing may trip.
		b, _ := in.p.Breakers().Lookup("model/big")
		if s := b.Snapshot(); s.State != breaker.StateClosed || s.Calls != 4 || s.Failures != 4 {
			t.Fatalf("instance %d local window: %+v", i, s)
		}
	}
	waitState(t, ins, "model/big", breaker.StateOpen)
	before := srv.Stats("big").Calls
	for _, in := range ins {
		askSource(t, in, "after the trip")
	}
	if c := srv.Stats("big").Calls; c != before {
		t.Fatalf("%d calls reached the model after the cluster tripped it", c-before)
	}
}

func TestSharedRateLimit(t *testing.T) {
	// Two tokens for the tenant in the whole cluster, not two per instance.
	redistest.Client(t)
	_, ins := sharedCluster(t, 2, redistest.URL(),
		"{global_rps: 100000, tenant_rps: 100000}", "{tenant_rps: 0.001, tenant_burst: 2, on_limit: reject}")
	var got []bool
	for _, in := range []*instance{ins[0], ins[1], ins[0], ins[1]} {
		_, err := in.p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: "q"})
		if err != nil && !errors.Is(err, pipeline.ErrRejected) {
			t.Fatal(err)
		}
		got = append(got, err == nil)
	}
	if got[0] != true || got[1] != true || got[2] != false || got[3] != false {
		t.Fatalf("admitted %v, want [true true false false]", got)
	}
}

func TestSharedRedisKilledAndRestarted(t *testing.T) {
	rs := redistest.StartServer(t)
	srv, ins := sharedCluster(t, 2, rs.URL())
	a, b := ins[0], ins[1]
	srv.SetFault("big", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})

	rs.Kill()
	// Every question is answered while Redis is down, and the trip on A
	// stays local.
	for i := range 4 {
		if src := askSource(t, a, "down"+string(rune('0'+i))); src != tiers.SourceFallback {
			t.Fatalf("A answered from %s", src)
		}
	}
	if a.state("model/big") != breaker.StateOpen || b.state("model/big") != breaker.StateClosed {
		t.Fatalf("during the outage: A %v, B %v", a.state("model/big"), b.state("model/big"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for a.p.Status().Store.Healthy {
		if time.Now().After(deadline) {
			t.Fatal("status still healthy during the outage")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Redis is back: A's open reaches B.
	rs.Start()
	deadline = time.Now().Add(10 * time.Second)
	for !a.p.Status().Store.Healthy || !b.p.Status().Store.Healthy {
		if time.Now().After(deadline) {
			t.Fatal("stores did not recover")
		}
		askSource(t, a, "while reconnecting") // A skips the model: its breaker is open
		time.Sleep(5 * time.Millisecond)
	}
	waitState(t, ins, "model/big", breaker.StateOpen)
	srv.ResetStats()
	if src := askSource(t, b, "after"); src != tiers.SourceFallback || srv.Stats("big").Calls != 0 {
		t.Fatalf("B after the resync: %s, %d calls", src, srv.Stats("big").Calls)
	}
}
