package config

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

func TestBuildChecksAPIKeyEnv(t *testing.T) {
	cfg := mustParse(t, "models: {m: {base_url: \"http://127.0.0.1:1/v1\", api_key_env: TEST_KEY}}\ntiers: [{kind: llm, models: [m]}, {kind: static}]")
	_, err := Build(cfg, Env{Getenv: noEnv})
	if err == nil || !strings.Contains(err.Error(), "models.m.api_key_env: environment variable TEST_KEY is not set") {
		t.Fatalf("err = %v", err)
	}
	cfg.Redis.URL = "redis://:sk-secret-value@127.0.0.1:6379/notadb"
	_, err = Build(cfg, Env{Getenv: func(string) string { return "sk-secret-value" }})
	if err == nil || !strings.Contains(err.Error(), "redis.url") || strings.Contains(err.Error(), "sk-secret") {
		t.Fatalf("err = %v", err)
	}
	cfg.Redis.URL = ""
	cfg.Tiers = append(cfg.Tiers, Tier{Kind: KindRetrieval})
	_, err = Build(cfg, Env{Getenv: func(string) string { return "k" }})
	if err == nil || !strings.Contains(err.Error(), "knowledge_base.path: is required by tiers[2]") {
		t.Fatalf("err = %v", err)
	}
}

// TestRedisURLFromEnv guards the Redis password: redis.url_env names the
// variable that holds the whole URL, so the password need not be written
// into the file; an unset variable is an error naming the field, and
// neither the URL nor its password reaches an error.
func TestRedisURLFromEnv(t *testing.T) {
	cfg := mustParse(t, "redis: {url_env: TEST_REDIS_URL, op_timeout: 20ms}\ntiers: [{kind: static}]")
	_, err := Build(cfg, Env{Getenv: noEnv})
	if err == nil || !strings.Contains(err.Error(), "redis.url_env: environment variable TEST_REDIS_URL is not set") {
		t.Fatalf("err = %v", err)
	}
	env := func(url string) Env {
		return Env{Getenv: func(k string) string {
			if k == "TEST_REDIS_URL" {
				return url
			}
			return ""
		}}
	}
	_, err = Build(cfg, env("redis://:sk-secret-value@127.0.0.1:6379/notadb"))
	if err == nil || !strings.Contains(err.Error(), "redis.url_env: environment variable TEST_REDIS_URL does not hold") ||
		strings.Contains(err.Error(), "sk-secret") {
		t.Fatalf("err = %v", err)
	}
	// A URL no Redis answers on: the pipeline starts on the shared store,
	// unhealthy, and runs on local state.
	p, err := Build(cfg, env("redis://:sk-secret-value@127.0.0.1:1/0"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if st := p.Status().Store; st.Kind != "redis" {
		t.Fatalf("store %+v, want the redis store", st)
	}
}

// TestBuildRunsTheDesignChain builds the design's chain against an llmtest
// upstream and checks a question goes cache miss -> primary, then hits.
func TestBuildRunsTheDesignChain(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{})
	defer srv.Close()
	cfg := mustParse(t, strings.ReplaceAll(designConfig, "https://dashscope.example/v1", srv.URL))
	kb, err := retrieval.New(testDocs)
	if err != nil {
		t.Fatal(err)
	}
	var seenKey string
	rec := &recorder{}
	p, err := Build(cfg, Env{KnowledgeBase: kb, Observer: rec, Getenv: func(k string) string {
		seenKey = k
		return "sk-test"
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if seenKey != "DASHSCOPE_API_KEY" {
		t.Fatalf("key read from %q", seenKey)
	}
	q := tiers.Query{Tenant: "acme", Question: "How do I return an item?"}
	res, err := p.Ask(context.Background(), q)
	if err != nil || res.Source != tiers.SourcePrimary || res.Model != "qwen3-max" || !strings.Contains(res.Text, "Returns policy") {
		t.Fatalf("first: %+v %v", res, err)
	}
	if got := strings.Join(outcomes(res), " "); got != "cache:miss primary/qwen3-max:success" {
		t.Fatalf("attempts = %s", got)
	}
	if n := rec.count(pipeline.EventAttempt); n != 2 {
		t.Fatalf("the observer saw %d attempts, want 2", n)
	}
	res, err = p.Ask(context.Background(), q)
	if err != nil || res.Source != tiers.SourceCache {
		t.Fatalf("second: %+v %v", res, err)
	}
	st := p.Status()
	if len(st.Caches) != 1 || st.Caches[0].Entries != 1 || !st.KnowledgeBase.Loaded || st.Store.Kind != "memory" ||
		len(st.Bulkheads) != 1 || st.Bulkheads[0].MaxQueue != 200 || st.RateLimit.TenantRPS != 5 || st.RateLimit.GlobalBurst != 50 {
		t.Fatalf("status = %+v", st)
	}
	names := map[string]bool{}
	for _, b := range st.Breakers {
		names[b.Name] = true
	}
	for _, n := range []string{"tier/cache", "tier/primary", "model/qwen3-max", "model/qwen-turbo", "tier/static"} {
		if !names[n] {
			t.Errorf("status lacks breaker %s", n)
		}
	}
}

// TestBuildWiresStreamSettings: an llm tier's streaming settings reach
// its pipeline.Stage.
func TestBuildWiresStreamSettings(t *testing.T) {
	cfg := mustParse(t, `models: {m: {base_url: "http://127.0.0.1:1/v1"}}
tiers: [{kind: llm, models: [m], commit_after: 40, commit_after_duration: 250ms, stall_timeout: 2s,
         first_token_timeout: 1s, continue_prompt: go on}, {kind: static}]`)
	opts, err := options(cfg, Env{Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	want := pipeline.StreamConfig{CommitAfter: 40, CommitAfterDuration: 250 * time.Millisecond, StallTimeout: 2 * time.Second,
		FirstTokenTimeout: time.Second, ContinuePrompt: "go on"}
	if got := opts.Tiers[0].Stream; got != want {
		t.Fatalf("stream config %+v, want %+v", got, want)
	}
	if !opts.Tiers[0].Model || opts.Tiers[1].Model {
		t.Fatalf("model tiers %v %v, want only the llm tier", opts.Tiers[0].Model, opts.Tiers[1].Model)
	}
}

// TestBuildWiresHedge: hedge_after and hedge_budget reach the llm tier's
// pipeline.Stage, the budget 0.1 when left out, and hedging is off by
// default.
func TestBuildWiresHedge(t *testing.T) {
	cfg := mustParse(t, `models: {m: {base_url: "http://127.0.0.1:1/v1"}, n: {base_url: "http://127.0.0.1:2/v1"}}
tiers: [{kind: llm, models: [m], hedge_after: 2500ms}, {kind: llm, models: [n], hedge_budget: 0.3}, {kind: static}]`)
	opts, err := options(cfg, Env{Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		after  time.Duration
		budget float64
	}{{2500 * time.Millisecond, 0.1}, {0, 0.3}} {
		if st := opts.Tiers[i]; st.HedgeAfter != want.after || st.HedgeBudget != want.budget {
			t.Errorf("tiers[%d]: hedge_after %v, hedge_budget %v; want %v, %v", i, st.HedgeAfter, st.HedgeBudget, want.after, want.budget)
		}
	}
}

// TestBuildWiresPolicies: on_stream_break and on_limit, strings in the
// file, reach the pipeline as its StreamConfig.ContinueOnBreak and
// RateLimitConfig.Reject, each in both of its values.
func TestBuildWiresPolicies(t *testing.T) {
	for _, tt := range []struct {
		onBreak, onLimit string
		cont, reject     bool
	}{
		{"note", "degrade", false, false},
		{"continue", "reject", true, true},
	} {
		cfg := mustParse(t, `models: {m: {base_url: "http://127.0.0.1:1/v1"}}
rate_limit: {tenant_rps: 1, on_limit: `+tt.onLimit+`}
tiers: [{kind: llm, models: [m], on_stream_break: `+tt.onBreak+`}, {kind: static}]`)
		opts, err := options(cfg, Env{Getenv: noEnv})
		if err != nil {
			t.Fatal(err)
		}
		if got := opts.Tiers[0].Stream.ContinueOnBreak; got != tt.cont {
			t.Errorf("on_stream_break %s: ContinueOnBreak %v", tt.onBreak, got)
		}
		if got := opts.RateLimit.Reject; got != tt.reject {
			t.Errorf("on_limit %s: Reject %v", tt.onLimit, got)
		}
	}
}

// TestBuildConcurrentSameConfig: Build takes the Config by value; two
// pipelines built at once from one Config must not race on its models map
// and tiers slice (run with -race).
func TestBuildConcurrentSameConfig(t *testing.T) {
	cfg := Config{
		Models: map[string]Model{"m": {BaseURL: "http://127.0.0.1:1/v1"}},
		Tiers: []Tier{{Kind: KindLLM, LLM: LLMTier{Models: []string{"m"}}, Bulkhead: &Bulkhead{MaxConcurrent: 1}},
			{Kind: KindStatic}},
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			p, err := Build(cfg, Env{Getenv: noEnv})
			if err == nil {
				_ = p.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if cfg.Tiers[0].Name != "" || cfg.Models["m"].MaxTokens != 0 || cfg.Tiers[0].Bulkhead.QueueTimeout != 0 ||
		cfg.Tiers[0].LLM.Source != "" {
		t.Fatalf("Build changed the caller's config: %+v", cfg)
	}
}

// TestBulkheadQueueTimeoutDefault: README documents queue_timeout 2s as
// the default of a configured bulkhead; without it max_queue was ignored
// (a queued call was refused at once). A second question waits in the
// queue while the first holds the only slot, and both reach the model.
func TestBulkheadQueueTimeoutDefault(t *testing.T) {
	up := llmtest.New(llmtest.Config{})
	t.Cleanup(up.Close)
	entered, release := make(chan struct{}, 2), make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		up.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	cfg := mustParse(t, `models: {m: {base_url: "`+ts.URL+`/v1"}}
tiers: [{kind: llm, models: [m], bulkhead: {max_concurrent: 1, max_queue: 5}}, {kind: static}]`)
	if got := cfg.Tiers[0].Bulkhead.QueueTimeout; got != 2*time.Second {
		t.Fatalf("queue_timeout = %v, want the documented 2s", got)
	}
	p := mustBuild(t, cfg, Env{Getenv: noEnv})

	results := make([]*pipeline.Result, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	askAt := func(i int, q string) {
		wg.Go(func() { results[i], errs[i] = p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: q}) })
	}
	askAt(0, "first")
	<-entered // the first question holds the slot
	askAt(1, "second")
	deadline := time.Now().Add(5 * time.Second)
	for b := p.Status().Bulkheads[0]; b.Queued != 1; b = p.Status().Bulkheads[0] {
		if b.Rejected > 0 || time.Now().After(deadline) {
			close(release)
			wg.Wait()
			t.Fatalf("the second question did not wait in the queue: %+v", b)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("question %d: %v", i, errs[i])
		}
		if res.Source != tiers.SourcePrimary {
			t.Errorf("question %d answered by %s (%v), want primary", i, res.Source, outcomes(res))
		}
	}
	if b := p.Status().Bulkheads[0]; b.Rejected != 0 {
		t.Errorf("bulkhead rejected %d calls", b.Rejected)
	}
}

// TestHashEmbedderAddsNoUnrelatedArticles: with the hash embedder, a
// question the knowledge base does not cover gets no articles from the
// built retriever (hash vectors bring documents near only through shared
// words or bucket collisions), so it falls to the static tier, while
// covered questions still get theirs. kb-ood.jsonl holds the same bar as
// the keyword index's own test: at least 0.9 with no documents.
func TestHashEmbedderAddsNoUnrelatedArticles(t *testing.T) {
	p := mustBuild(t, mustParse(t, `knowledge_base: {path: ../testdata/kb}
tiers:
  - {name: cache, kind: semantic_cache, embedder: hash}
  - {name: retrieval, kind: retrieval, top_k: 3}
  - {name: static, kind: static}
`), Env{})
	for _, q := range []string{"hello", "吉他", "Python 里怎么反转一个列表"} {
		if res := ask(t, p, q); res.Source != tiers.SourceStatic {
			t.Errorf("%q answered by %s with %v, want static", q, res.Source, docIDs(res.Docs))
		}
	}
	if res := ask(t, p, "Can I change my delivery address?"); res.Source != tiers.SourceRetrieval ||
		len(res.Docs) == 0 || res.Docs[0].ID != "en-shipping-change-address" {
		t.Errorf("covered question: %s %v", res.Source, docIDs(res.Docs))
	}

	f, err := os.Open("../testdata/kb-ood.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total, none := 0, 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var c struct {
			Question string `json:"question"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil || c.Question == "" {
			continue
		}
		total++
		if res := ask(t, p, c.Question); len(res.Docs) == 0 {
			none++
		} else {
			t.Logf("leak: %q got %v", c.Question, docIDs(res.Docs))
		}
	}
	if total < 30 || float64(none) < 0.9*float64(total) {
		t.Errorf("%d of %d out-of-domain questions got no documents, want >= 0.9", none, total)
	}
}

func docIDs(docs []retrieval.Doc) []string {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids
}

// TestBuildStoreFromEmpty: a semantic_cache with store_from: [] writes no
// answer back, while one without store_from writes the primary's (the
// default [primary]).
func TestBuildStoreFromEmpty(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	for _, tc := range []struct {
		storeFrom string
		want      tiers.Source
	}{
		{"", tiers.SourceCache},
		{", store_from: []", tiers.SourcePrimary},
	} {
		p := mustBuild(t, mustParse(t, `models: {m: {base_url: "`+srv.URL+`"}}
tiers:
  - {kind: semantic_cache`+tc.storeFrom+`}
  - {kind: llm, models: [m], context_docs: 1}
  - {kind: static}
`), Env{HTTPClient: hc})
		var res *pipeline.Result
		for range 2 {
			res = ask(t, p, "How do I return an item?")
		}
		if res.Source != tc.want {
			t.Errorf("semantic_cache{%s}: second answer from %s, want %s", tc.storeFrom, res.Source, tc.want)
		}
	}
}

// TestBuildWiresRerankAndVectors: knowledge_base.rerank reaches the
// pipeline with its defaults and the model's cooldown, and a cache tier's
// embedder over the knowledge base makes a hybrid retriever that the
// pipeline runs and closes.
func TestBuildWiresRerankAndVectors(t *testing.T) {
	cfg := mustParse(t, `models: {r: {base_url: "http://127.0.0.1:1/v1", kind: rerank, cooldown: 3s}}
knowledge_base: {path: ../testdata/kb, min_relevance: 3, rerank: {model: r, min_score: 0.2}}
tiers: [{kind: semantic_cache}, {kind: retrieval}, {kind: static}]`)
	opts, err := options(cfg, Env{Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(opts.Closers)
	rr := opts.Rerank
	if rr == nil || rr.Model.ID != "r" || rr.Model.Cooldown != 3*time.Second || rr.Candidates != 20 ||
		rr.Timeout != 800*time.Millisecond || rr.MinScore != 0.2 {
		t.Fatalf("rerank %+v, want model r (cooldown 3s), 20 candidates, 800ms, min score 0.2", rr)
	}
	h, ok := opts.Vectors.(*retrieval.Hybrid)
	if !ok || !slices.ContainsFunc(opts.Closers, func(c io.Closer) bool { return c == h }) {
		t.Fatalf("vectors %T, closers %v: want the hybrid retriever, closed with the pipeline", opts.Vectors, opts.Closers)
	}
	if opts.Rerank.Reranker == nil {
		t.Error("no reranker")
	}
}
