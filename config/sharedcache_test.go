package config

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// sharedCacheConfig is a cache -> primary -> static chain whose cache,
// breakers and rate limits live in Redis. UPSTREAM, REDIS, PREFIX and
// SHARED are replaced by each test.
const sharedCacheConfig = `
server: {request_timeout: 3s}
models:
  big: {base_url: "UPSTREAM", model: big}
redis: {url: "REDIS", prefix: "PREFIX", op_timeout: 500ms}
tiers:
  - {name: cache, kind: semantic_cache, ttl: 1h, SHARED}
  - {name: primary, kind: llm, models: [big], timeout: 1s, context_docs: 1}
  - {name: static, kind: static, message: "sorry"}
`

// cacheCluster builds pipelines from sharedCacheConfig on one upstream and
// one Redis prefix; build(i) makes (or remakes) instance i.
type cacheCluster struct {
	t    *testing.T
	srv  *llmtest.Server
	cfg  Config
	kb   *retrieval.KnowledgeBase
	ins  []*pipeline.Pipeline
	stop []func()
}

func newCacheCluster(t *testing.T, n int, redisURL, shared string) *cacheCluster {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	yaml := strings.NewReplacer("UPSTREAM", srv.URL, "REDIS", redisURL, "PREFIX", redistest.Prefix(t),
		"SHARED", shared).Replace(sharedCacheConfig)
	kb, err := retrieval.New(testDocs)
	if err != nil {
		t.Fatal(err)
	}
	cc := &cacheCluster{t: t, srv: srv, cfg: mustParse(t, yaml), kb: kb, ins: make([]*pipeline.Pipeline, n)}
	for i := range n {
		cc.build(i)
	}
	return cc
}

// build (re)starts instance i, on a clock of its own at epoch, and waits
// for its first load of the shared entries when it has a shared cache.
func (cc *cacheCluster) build(i int) *pipeline.Pipeline {
	cc.t.Helper()
	p, err := Build(cc.cfg, Env{Clock: clock.NewManual(epoch), KnowledgeBase: cc.kb, Getenv: noEnv})
	if err != nil {
		cc.t.Fatal(err)
	}
	cc.t.Cleanup(func() { _ = p.Close() })
	cc.ins[i] = p
	return p
}

// shared returns the sharing status of p's cache tier, nil if local.
func shared(p *pipeline.Pipeline) *pipeline.SharedCacheStatus {
	for _, c := range p.Status().Caches {
		if c.Tier == "cache" {
			return c.Shared
		}
	}
	return nil
}

// waitLoaded waits until p's first load of the shared entries ended.
func waitLoaded(t *testing.T, p *pipeline.Pipeline) {
	t.Helper()
	waitFor(t, 5*time.Second, "the load of the shared entries", func() bool {
		sh := shared(p)
		return sh != nil && sh.Loads > 0 && !sh.Loading && !sh.LoadedAt.IsZero()
	})
}

// waitFor polls cond every 2ms for at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func askAs(t *testing.T, p *pipeline.Pipeline, tenant, q string) *pipeline.Result {
	t.Helper()
	res, err := p.Ask(context.Background(), tiers.Query{Tenant: tenant, Question: q})
	if err != nil {
		t.Fatalf("Ask(%s, %q): %v", tenant, q, err)
	}
	return res
}

func TestSharedCacheHitOnEveryInstance(t *testing.T) {
	redistest.Client(t)
	cc := newCacheCluster(t, 3, redistest.URL(), "shared: true")
	a, b, c := cc.ins[0], cc.ins[1], cc.ins[2]
	for _, p := range cc.ins {
		waitLoaded(t, p)
	}
	const q = "How do I return an item?"
	if res := askAs(t, a, "acme", q); res.Source != tiers.SourcePrimary {
		t.Fatalf("A answered from %s", res.Source)
	}
	stored := time.Now()
	calls := cc.srv.Stats("big").Calls
	for i, p := range []*pipeline.Pipeline{b, c} {
		waitFor(t, time.Second, fmt.Sprintf("the entry on instance %d", i+1), func() bool { return shared(p).Received == 1 })
	}
	t.Logf("A's answer reached B and C within %v", time.Since(stored))
	for i, p := range []*pipeline.Pipeline{b, c} {
		if res := askAs(t, p, "acme", "how can I return an item"); res.Source != tiers.SourceCache {
			t.Fatalf("instance %d answered from %s: %v", i+1, res.Source, outcomes(res))
		}
	}
	if got := cc.srv.Stats("big").Calls; got != calls {
		t.Fatalf("%d model calls after A's answer, want none", got-calls)
	}

	// Tenants stay apart: another tenant's same question calls the model.
	if res := askAs(t, b, "globex", q); res.Source != tiers.SourcePrimary {
		t.Fatalf("globex answered from %s on B", res.Source)
	}

	// A restarted B serves A's answer (and its own) before any model call.
	_ = b.Close()
	b = cc.build(1)
	waitLoaded(t, b)
	if sh := shared(b); sh.Loaded != 2 || !sh.Healthy {
		t.Fatalf("restarted B's sharing: %+v", sh)
	}
	calls = cc.srv.Stats("big").Calls
	for _, tn := range []string{"acme", "globex"} {
		if res := askAs(t, b, tn, q); res.Source != tiers.SourceCache {
			t.Fatalf("restarted B answered %s from %s", tn, res.Source)
		}
	}
	if res := askAs(t, b, "initech", q); res.Source != tiers.SourcePrimary {
		t.Fatalf("a tenant with no entry answered from %s", res.Source)
	}
	if got := cc.srv.Stats("big").Calls; got != calls+1 {
		t.Fatalf("%d model calls on the restarted B, want 1 (initech's)", got-calls)
	}
}

// TestSharedCacheAcrossKnowledgeBaseLoads: entries are marked with the
// knowledge base's content, not with how often an instance loaded it, so
// an instance started after the others reloaded the same documents serves
// their entries, and one holding other documents does not.
func TestSharedCacheAcrossKnowledgeBaseLoads(t *testing.T) {
	redistest.Client(t)
	cc := newCacheCluster(t, 1, redistest.URL(), "shared: true")
	a := cc.ins[0]
	waitLoaded(t, a)
	if err := a.ReloadKnowledgeBase(); err != nil { // A at version 2, same documents
		t.Fatal(err)
	}
	const q = "How do I return an item?"
	if res := askAs(t, a, "acme", q); res.Source != tiers.SourcePrimary {
		t.Fatalf("A answered from %s", res.Source)
	}
	start := func(docs []retrieval.Doc) *pipeline.Pipeline {
		kb, err := retrieval.New(docs)
		if err != nil {
			t.Fatal(err)
		}
		p := mustBuild(t, cc.cfg, Env{Clock: clock.NewManual(epoch), KnowledgeBase: kb, Getenv: noEnv})
		t.Cleanup(func() { _ = p.Close() })
		waitFor(t, time.Second, "A's entry", func() bool { sh := shared(p); return sh != nil && (sh.Loaded > 0 || sh.Received > 0) })
		return p
	}
	same := start(testDocs) // version 1
	if res := askAs(t, same, "acme", q); res.Source != tiers.SourceCache {
		t.Fatalf("an instance on the same documents answered from %s: %v", res.Source, outcomes(res))
	}
	other := start(append(slices.Clone(testDocs), retrieval.Doc{ID: "new", Title: "New", Text: "A new article."}))
	if res := askAs(t, other, "acme", q); res.Source != tiers.SourcePrimary {
		t.Fatalf("an instance on other documents answered from %s", res.Source)
	}
}

func TestSharedFalseKeepsTheCacheLocal(t *testing.T) {
	redistest.Client(t)
	cc := newCacheCluster(t, 2, redistest.URL(), "shared: false")
	a, b := cc.ins[0], cc.ins[1]
	if shared(a) != nil {
		t.Fatalf("shared: false reports %+v", shared(a))
	}
	askAs(t, a, "acme", "How do I return an item?")
	time.Sleep(50 * time.Millisecond) // a shared entry arrives in milliseconds
	if res := askAs(t, b, "acme", "How do I return an item?"); res.Source != tiers.SourcePrimary {
		t.Fatalf("B answered from %s with shared: false", res.Source)
	}
}

func TestSharedCacheDefaultsOnWithRedis(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		shared     bool
	}{
		{"redis set", "redis: {url: \"redis://127.0.0.1:1/0\", op_timeout: 20ms}\n", true},
		{"redis set, shared: false", "redis: {url: \"redis://127.0.0.1:1/0\", op_timeout: 20ms}\nSHARED", false},
		{"no redis", "", false},
		{"no redis, shared: true", "SHARED_TRUE", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := ""
			switch {
			case strings.Contains(tc.yaml, "SHARED_TRUE"):
				shared = ", shared: true"
			case strings.Contains(tc.yaml, "SHARED"):
				shared = ", shared: false"
			}
			yml := strings.NewReplacer("SHARED_TRUE", "", "SHARED", "").Replace(tc.yaml) +
				"tiers: [{kind: semantic_cache" + shared + "}, {kind: static}]"
			p := mustBuild(t, mustParse(t, yml), Env{Getenv: noEnv})
			if got := p.Status().Caches[0].Shared != nil; got != tc.shared {
				t.Fatalf("shared = %v, want %v", got, tc.shared)
			}
		})
	}
	for yml, want := range map[string]string{
		"tiers: [{kind: stale_cache, shared: true}, {kind: static}]":                                 "tiers[0].shared: not a field",
		"redis: {url: \"redis://127.0.0.1:1/0\"}\ntiers: [{kind: semantic_cache, shared_queue: -1}]": "tiers[0].shared_queue: must be >= 0",
	} {
		if _, err := Parse([]byte(yml)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", yml, err, want)
		}
	}
}

func TestSharedCacheThroughRedisOutage(t *testing.T) {
	srv := redistest.StartServer(t)
	cc := newCacheCluster(t, 3, srv.URL(), "shared: true, shared_queue: 3")
	a, b, c := cc.ins[0], cc.ins[1], cc.ins[2]
	for _, p := range cc.ins {
		waitLoaded(t, p)
	}
	failed := 0
	ask := func(p *pipeline.Pipeline, q string) tiers.Source {
		res, err := p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: q})
		if err != nil || res.Source == tiers.SourceStatic {
			failed++
			return ""
		}
		return res.Source
	}
	before := "How do I return an item?"
	ask(a, before)
	waitFor(t, time.Second, "A's answer on C", func() bool { return shared(c).Received == 1 })
	// The outage begins once A knows its write went through: a write whose
	// reply the outage cuts off stays queued.
	waitFor(t, time.Second, "A's write", func() bool { sh := shared(a); return sh.Written == 1 && sh.Queued == 0 })

	srv.Kill()
	waitFor(t, 5*time.Second, "A to notice the outage", func() bool { return !shared(a).Healthy })
	// During the outage every instance answers: from its local cache at
	// once, else from the model; A's answers queue, at most 3.
	during := []string{"Where is my parcel?", "Can I pay with PayPal?", "Do you ship to Canada?",
		"How long is the warranty?", "Can I change my address?"}
	start := time.Now()
	for _, q := range during {
		if src := ask(a, q); src != tiers.SourcePrimary {
			t.Fatalf("A answered %q from %q during the outage", q, src)
		}
	}
	fromB := "Is there a student discount?"
	ask(b, fromB)
	if src := ask(c, before); src != tiers.SourceCache {
		t.Fatalf("C answered from %q during the outage", src)
	}
	t.Logf("7 questions during the outage took %v", time.Since(start))
	if sh := shared(a); sh.Queued > 3 || sh.Dropped != 2 {
		t.Fatalf("A's sharing during the outage: %+v", sh)
	}

	srv.Start()
	// After the outage the newest 3 of A's answers, and B's, reach C.
	newest := append(append([]string(nil), during[2:]...), fromB)
	// C holds every entry A and B wrote (A's first answer of the outage
	// too, if its write was still being retried when Redis came back).
	waitFor(t, 10*time.Second, "the outage's answers on C", func() bool {
		sa, sb := shared(a), shared(b)
		return sa.Queued == 0 && sb.Queued == 0 && sa.Written >= 4 && sb.Written >= 1 &&
			uint64(c.Status().Caches[0].Entries) >= sa.Written+sb.Written
	})
	calls := cc.srv.Stats("big").Calls
	for _, q := range newest {
		if src := ask(c, q); src != tiers.SourceCache {
			t.Fatalf("C answered %q from %q after the outage", q, src)
		}
	}
	if got := cc.srv.Stats("big").Calls; got != calls {
		t.Fatalf("%d model calls on C after the outage, want none", got-calls)
	}
	if failed != 0 {
		t.Fatalf("%d questions failed", failed)
	}
	// A loads what others wrote meanwhile once its read of the stream
	// under way ends (within Block).
	waitFor(t, 5*time.Second, "A's load after the outage", func() bool { return shared(a).Loads >= 2 })
	if sh := shared(a); !sh.Healthy || sh.Dropped != 2 {
		t.Fatalf("A's sharing after the outage: %+v", sh)
	}
}
