package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// designConfig is the configuration shown in the design document.
const designConfig = `
server:   {addr: "127.0.0.1:8080", request_timeout: 12s, max_question_bytes: 4096}
auth:     {keys: [{key_env: RAGFUSE_KEY_ACME, tenant: acme}]}
models:
  qwen3-max:  {base_url: "https://dashscope.example/v1", api_key_env: DASHSCOPE_API_KEY, model: qwen3-max}
  qwen-turbo: {base_url: "https://dashscope.example/v1", api_key_env: DASHSCOPE_API_KEY, model: qwen-turbo}
  embed:      {base_url: "https://dashscope.example/v1", api_key_env: DASHSCOPE_API_KEY, model: text-embedding-v3}
knowledge_base: {path: testdata/kb}
redis: {url: ""}
rate_limit: {global_rps: 50, tenant_rps: 5, on_limit: degrade}
tiers:
  - {name: cache,     kind: semantic_cache, embedder: hash, similarity: 0.92, ttl: 24h, timeout: 300ms}
  - {name: primary,   kind: llm, models: [qwen3-max], timeout: 30s, context_docs: 5,
     breaker: {failure_threshold: 2, window: 20, minimum_calls: 10, failure_rate: 0.5,
               slow_call_duration: 10s, slow_call_rate: 0.8, open_duration: 30s, half_open_max_calls: 1},
     bulkhead: {max_concurrent: 50, max_queue: 200, queue_timeout: 2s}}
  - {name: fallback,  kind: llm, models: [qwen-turbo], timeout: 15s, context_docs: 3}
  - {name: retrieval, kind: retrieval, top_k: 3}
  - {name: static,    kind: static, message: "抱歉，AI助手服务暂时出现问题，请稍后重试或联系人工客服。"}
`

func TestParseDesignConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(designConfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.RequestTimeout != 12*time.Second || cfg.Server.MaxBodyBytes != 64<<10 || cfg.Server.DefaultLanguage != "zh" {
		t.Fatalf("server = %+v", cfg.Server)
	}
	if m := cfg.Models["qwen3-max"]; m.MaxTokens != 512 || m.Cooldown != DefaultCooldown || m.APIKeyEnv != "DASHSCOPE_API_KEY" {
		t.Fatalf("model = %+v", m)
	}
	if len(cfg.Tiers) != 5 {
		t.Fatalf("%d tiers", len(cfg.Tiers))
	}
	p, f, r := cfg.Tiers[1], cfg.Tiers[2], cfg.Tiers[3]
	if p.Source != "primary" || f.Source != "fallback" || p.Breaker.SlowCallRate != 0.8 || p.Bulkhead.MaxQueue != 200 ||
		f.ContextDocs != 3 || r.Timeout != time.Second || cfg.Tiers[0].StoreFrom[0] != "primary" || cfg.Tiers[4].Timeout != 100*time.Millisecond {
		t.Fatalf("tiers = %+v", cfg.Tiers)
	}
	if cfg.RateLimit.TenantBurst != 5 || cfg.RateLimit.GlobalBurst != 50 {
		t.Fatalf("rate limit = %+v", cfg.RateLimit)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	const models = "models: {m: {base_url: \"http://127.0.0.1:1/v1\"}}\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top-level field", "servr: {addr: x}\ntiers: [{kind: static}]", "servr: unknown field"},
		{"unknown tier field", models + "tiers: [{kind: llm, models: [m], modelz: [m]}]", "tiers[0].modelz: unknown field"},
		{"unknown nested field", models + "tiers: [{kind: llm, models: [m], breaker: {treshold: 2}}]", "tiers[0].breaker.treshold: unknown field"},
		{"unknown model field", "models: {m: {base_url: \"http://x/v1\", key: secret}}\ntiers: [{kind: static}]", "models.m.key: unknown field"},
		{"negative timeout", "tiers: [{kind: static}, {kind: retrieval, timeout: -1s}, {kind: static, name: s2, timeout: -2s}]", "tiers[2].timeout: must be > 0"},
		{"duration without unit", "tiers: [{kind: static, timeout: 5}]", "tiers[0].timeout: want a duration with a unit"},
		{"bad duration", "server: {request_timeout: soon}\ntiers: [{kind: static}]", `server.request_timeout: want a duration like 5s or 300ms, not "soon"`},
		{"number for string list", models + "tiers: [{kind: llm, models: m}]", "tiers[0].models: want a list"},
		{"bad number", "rate_limit: {tenant_rps: lots}\ntiers: [{kind: static}]", `rate_limit.tenant_rps: want a number, not "lots"`},
		{"missing model", models + "tiers: [{kind: llm, models: [m]}, {kind: llm, models: [m, nope]}]", `tiers[1].models[1]: unknown model "nope"`},
		{"no models", "tiers: [{kind: llm}]", "tiers[0].models: at least one model is required"},
		{"similarity", "tiers: [{kind: semantic_cache, similarity: 1.5}]", "tiers[0].similarity: must be in (0, 1]"},
		{"embedder", "tiers: [{kind: semantic_cache, embedder: nope}]", `tiers[0].embedder: must be "hash" or a model`},
		{"on_limit", "rate_limit: {on_limit: maybe}\ntiers: [{kind: static}]", `rate_limit.on_limit: must be "degrade" or "reject"`},
		{"kind", "tiers: [{kind: static}, {kind: oracle}]", `tiers[1].kind: unknown kind "oracle"`},
		{"duplicate name", "tiers: [{kind: static}, {kind: static}]", `tiers[1].name: "static" is used by an earlier tier`},
		{"base url", "models: {m: {base_url: \"ftp://x\"}}\ntiers: [{kind: static}]", "models.m.base_url: must be an http or https URL"},
		{"base url query", "models: {m: {base_url: \"https://x/v1?key=sk-1\"}}\ntiers: [{kind: static}]", "models.m.base_url: must not carry a query"},
		{"base url fragment", "models: {m: {base_url: \"https://x/v1#top\"}}\ntiers: [{kind: static}]", "models.m.base_url: must not carry a query"},
		{"no tiers", "server: {addr: x}", "tiers: at least one tier is required"},
		{"bulkhead", "tiers: [{kind: static, bulkhead: {max_concurrent: 0}}]", "tiers[0].bulkhead.max_concurrent: must be > 0"},
		{"failure rate", models + "tiers: [{kind: llm, models: [m], breaker: {failure_rate: 2}}]", "tiers[0].breaker.failure_rate: must be <= 1"},
		{"commit_after_duration", models + "tiers: [{kind: llm, models: [m], commit_after_duration: -1s}]", "tiers[0].commit_after_duration: must be >= 0"},
		{"store_from", "tiers: [{kind: semantic_cache, store_from: [static]}]", `tiers[0].store_from[0]: must be "primary" or "fallback"`},
		{"infinite global_rps", "rate_limit: {global_rps: .inf}\ntiers: [{kind: static}]", "rate_limit.global_rps: must be a finite number"},
		{"infinite tenant_rps", "rate_limit: {tenant_rps: .inf}\ntiers: [{kind: static}]", "rate_limit.tenant_rps: must be a finite number"},
		{"NaN global_rps", "rate_limit: {global_rps: .nan}\ntiers: [{kind: static}]", "rate_limit.global_rps: must be a finite number"},
		{"infinite similarity", "tiers: [{kind: semantic_cache, similarity: .inf}]", "tiers[0].similarity: must be a finite number"},
		{"NaN similarity", "tiers: [{kind: stale_cache, similarity: .nan}]", "tiers[0].similarity: must be a finite number"},
		{"infinite failure rate", models + "tiers: [{kind: llm, models: [m], breaker: {failure_rate: -.inf}}]", "tiers[0].breaker.failure_rate: must be a finite number"},
		{"NaN slow call rate", "tiers: [{kind: static, breaker: {slow_call_rate: .nan}}]", "tiers[0].breaker.slow_call_rate: must be a finite number"},
		{"infinite slow call rate", "tiers: [{kind: static, breaker: {slow_call_rate: -.Inf}}]", "tiers[0].breaker.slow_call_rate: must be a finite number"},
		{"infinite open backoff", "tiers: [{kind: static, breaker: {open_backoff: .inf}}]", "tiers[0].breaker.open_backoff: must be a finite number"},
		{"not yaml", "tiers: [", "pipeline: config: yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			var fe *FieldError
			if tt.name != "not yaml" && !errors.As(err, &fe) {
				t.Fatalf("err %T is not a *FieldError", err)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ragfuse.yaml")
	if err := os.WriteFile(path, []byte("tiers: [{kind: static, message: hi}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil || cfg.Tiers[0].Message != "hi" || cfg.Tiers[0].Name != "static" {
		t.Fatalf("cfg=%+v err=%v", cfg, err)
	}
	if _, err := LoadConfig(path + ".missing"); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestBuildChecksAPIKeyEnv(t *testing.T) {
	cfg, err := ParseConfig([]byte("models: {m: {base_url: \"http://127.0.0.1:1/v1\", api_key_env: TEST_KEY}}\ntiers: [{kind: llm, models: [m]}, {kind: static}]"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(cfg, BuildEnv{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "models.m.api_key_env: environment variable TEST_KEY is not set") {
		t.Fatalf("err = %v", err)
	}
	cfg.Redis.URL = "redis://:sk-secret-value@127.0.0.1:6379/notadb"
	_, err = Build(cfg, BuildEnv{Getenv: func(string) string { return "sk-secret-value" }})
	if err == nil || !strings.Contains(err.Error(), "redis.url") || strings.Contains(err.Error(), "sk-secret") {
		t.Fatalf("err = %v", err)
	}
	cfg.Redis.URL = ""
	cfg.Tiers = append(cfg.Tiers, TierConfig{Kind: KindRetrieval})
	_, err = Build(cfg, BuildEnv{Getenv: func(string) string { return "k" }})
	if err == nil || !strings.Contains(err.Error(), "knowledge_base.path: is required by tiers[2]") {
		t.Fatalf("err = %v", err)
	}
}

// TestBuildRunsTheDesignChain builds the design's chain against an llmtest
// upstream and checks a question goes cache miss -> primary, then hits.
func TestBuildRunsTheDesignChain(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{})
	defer srv.Close()
	yaml := strings.ReplaceAll(designConfig, "https://dashscope.example/v1", srv.URL)
	cfg, err := ParseConfig([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	kb, err := retrieval.New([]retrieval.Doc(testKB))
	if err != nil {
		t.Fatal(err)
	}
	var seenKey string
	rec := &recorder{}
	p, err := Build(cfg, BuildEnv{KnowledgeBase: kb, Observer: rec, Getenv: func(k string) string {
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
	res, err = p.Ask(context.Background(), q)
	if err != nil || res.Source != tiers.SourceCache {
		t.Fatalf("second: %+v %v", res, err)
	}
	st := p.Status()
	if len(st.Caches) != 1 || st.Caches[0].Entries != 1 || !st.KnowledgeBase.Loaded || st.Store.Kind != "memory" ||
		len(st.Bulkheads) != 1 || st.Bulkheads[0].MaxQueue != 200 {
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

func TestBuildWiresStreamSettings(t *testing.T) {
	cfg, err := ParseConfig([]byte(`models: {m: {base_url: "http://127.0.0.1:1/v1"}}
tiers: [{kind: llm, models: [m], commit_after: 40, commit_after_duration: 250ms, stall_timeout: 2s}, {kind: static}]`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(cfg, BuildEnv{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	want := StreamConfig{CommitAfter: 40, CommitAfterDuration: 250 * time.Millisecond, StallTimeout: 2 * time.Second,
		OnStreamBreak: OnStreamBreakNote}
	if got := p.stages[0].Stream; got != want {
		t.Fatalf("stream config %+v, want %+v", got, want)
	}
}

// TestDecodeYAML decodes a document that embeds a configuration: the
// paths of its errors start below the given prefix, and a yaml.Node field
// keeps its YAML as it is.
func TestDecodeYAML(t *testing.T) {
	type doc struct {
		Name  string        `yaml:"name"`
		Wait  time.Duration `yaml:"wait"`
		Inner yaml.Node     `yaml:"inner"`
	}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("name: a\nwait: 2s\ninner: {anything: [1, 2]}\n"), &root); err != nil {
		t.Fatal(err)
	}
	var d doc
	if err := DecodeYAML(&root, &d, "top"); err != nil {
		t.Fatal(err)
	}
	if d.Name != "a" || d.Wait != 2*time.Second || d.Inner.Kind != yaml.MappingNode {
		t.Fatalf("decoded %+v", d)
	}
	if err := yaml.Unmarshal([]byte("name: a\nwait: 2\ncolour: red\n"), &root); err != nil {
		t.Fatal(err)
	}
	err := DecodeYAML(&root, &d, "top")
	var fe *FieldError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "top.wait: want a duration") ||
		!strings.Contains(err.Error(), "top.colour: unknown field") {
		t.Fatalf("err = %v, want both fields named below top", err)
	}
}
