package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
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
	cfg := mustParse(t, designConfig)
	// The HTTP server fills the server: fields it owns (api.ServerOptions);
	// the request's deadline is the pipeline's and is filled here.
	if cfg.Server.RequestTimeout != 12*time.Second || cfg.Server.MaxQuestionBytes != 4096 || cfg.Server.MaxBodyBytes != 0 {
		t.Fatalf("server = %+v", cfg.Server)
	}
	if m := cfg.Models["qwen3-max"]; m.MaxTokens != 512 || m.Cooldown != 10*time.Second || m.APIKeyEnv != "DASHSCOPE_API_KEY" {
		t.Fatalf("model = %+v", m)
	}
	if len(cfg.Tiers) != 5 {
		t.Fatalf("%d tiers", len(cfg.Tiers))
	}
	p, f, r := cfg.Tiers[1], cfg.Tiers[2], cfg.Tiers[3]
	if p.LLM.Source != "primary" || f.LLM.Source != "fallback" || p.Breaker.SlowCallRate != 0.8 || p.Bulkhead.MaxQueue != 200 ||
		f.LLM.ContextDocs != 3 || r.Timeout != time.Second || r.Retrieval.TopK != 3 ||
		cfg.Tiers[0].Cache.StoreFrom[0] != "primary" || cfg.Tiers[4].Timeout != 100*time.Millisecond {
		t.Fatalf("tiers = %+v", cfg.Tiers)
	}
	if cfg.RateLimit.TenantBurst != 5 || cfg.RateLimit.GlobalBurst != 50 {
		t.Fatalf("rate limit = %+v", cfg.RateLimit)
	}
}

// TestParseFillsKindDefaults: each kind's defaults land in its own
// settings, and nothing of another kind is filled in.
func TestParseFillsKindDefaults(t *testing.T) {
	cfg := mustParse(t, `models: {m: {base_url: "http://x/v1"}}
knowledge_base: {path: kb}
tiers: [{kind: semantic_cache}, {kind: llm, models: [m]}, {kind: llm, models: [m], name: second}, {kind: stale_cache},
        {kind: retrieval}, {kind: static}]`)
	cache := CacheTier{Embedder: "hash", Similarity: 0.92, TTL: 24 * time.Hour, MaxEntries: 10000, MaxTenants: 10000}
	semantic := cache
	semantic.StoreFrom = []string{"primary"}
	llm := func(source string) LLMTier {
		turns := 6
		return LLMTier{Source: source, Models: []string{"m"}, ContextDocs: 5, HistoryTurns: &turns, OnStreamBreak: "note", HedgeBudget: 0.1}
	}
	want := []Tier{
		{Name: "cache", Kind: KindSemanticCache, Timeout: 300 * time.Millisecond, Cache: semantic},
		{Name: "primary", Kind: KindLLM, Timeout: 10 * time.Second, LLM: llm("primary")},
		{Name: "second", Kind: KindLLM, Timeout: 10 * time.Second, LLM: llm("fallback")},
		{Name: "stale_cache", Kind: KindStaleCache, Timeout: 300 * time.Millisecond, Cache: cache},
		{Name: "retrieval", Kind: KindRetrieval, Timeout: time.Second, Retrieval: RetrievalTier{TopK: 3}},
		{Name: "static", Kind: KindStatic, Timeout: 100 * time.Millisecond},
	}
	for i, w := range want {
		if got := cfg.Tiers[i]; !reflect.DeepEqual(got, w) {
			t.Errorf("tiers[%d] = %+v\nwant %+v", i, got, w)
		}
	}
	if cfg.KnowledgeBase.Timeout != time.Second {
		t.Errorf("knowledge_base.timeout = %v, want the retrieval tier's 1s", cfg.KnowledgeBase.Timeout)
	}
	cfg = mustParse(t, "knowledge_base: {path: kb}\ntiers: [{kind: retrieval, timeout: 2s}, {kind: static}]")
	if cfg.KnowledgeBase.Timeout != 2*time.Second {
		t.Errorf("knowledge_base.timeout = %v, want the retrieval tier's 2s", cfg.KnowledgeBase.Timeout)
	}
}

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ragfuse.yaml")
	if err := os.WriteFile(path, []byte("tiers: [{kind: static, message: hi}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil || cfg.Tiers[0].Static.Message != "hi" || cfg.Tiers[0].Name != "static" {
		t.Fatalf("cfg=%+v err=%v", cfg, err)
	}
	if _, err := Load(path + ".missing"); err == nil {
		t.Fatal("missing file accepted")
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
	// An embedded configuration's tiers are checked per kind as well.
	if err := yaml.Unmarshal([]byte("tiers: [{kind: static, top_k: 2}]"), &root); err != nil {
		t.Fatal(err)
	}
	var c Config
	if err := DecodeYAML(&root, &c, "config"); err == nil || !strings.Contains(err.Error(), "config.tiers[0].top_k: not a field of a static tier") {
		t.Fatalf("err = %v", err)
	}
}

// TestConfigErrorHidesURLPassword: a URL written where a mapping belongs
// is quoted in the error without its user information; other values are
// quoted as they are.
func TestConfigErrorHidesURLPassword(t *testing.T) {
	for body, want := range map[string]string{
		`redis: "redis://:hunter2@10.0.0.5:6379/0"`:             `"redis://***@10.0.0.5:6379/0"`,
		`models: {m: "https://bob:p@ss@api.example/v1"}`:        `"https://***@api.example/v1"`,
		`redis: "https://api.example/v1/users/@me"`:             `"https://api.example/v1/users/@me"`,
		`redis: "rediss://:0123456789abcdefghij0123456789@h:1"`: `"rediss://***@h:1"`,
		// A base64 password holds '/'; '?' and '#' may appear too.
		`redis: "redis://:s3cr/et@h:6379/0"`: `"redis://***@h:6379/0"`,
		`redis: "redis://:s3cr#et@h:6379/0"`: `"redis://***@h:6379/0"`,
		`redis: "redis://:s3cr?et@h:6379/0"`: `"redis://***@h:6379/0"`,
	} {
		_, err := Parse([]byte(body + "\ntiers: [{name: s, kind: static}]\n"))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") ||
			strings.Contains(err.Error(), ":p@ss") || strings.Contains(err.Error(), "0123456789") || strings.Contains(err.Error(), "s3cr") {
			t.Errorf("%s: err = %v, want it to quote %s", body, err, want)
		}
	}
}

// TestConfigMergeKeys: YAML merge keys (<<: *anchor) reuse settings, as
// the YAML decoder allows; the check for unknown fields looks inside the
// merged mapping instead of taking "<<" for a field.
func TestConfigMergeKeys(t *testing.T) {
	cfg := mustParse(t, `
models:
  m: {base_url: "http://x/v1"}
tiers:
  - &llm {name: primary, kind: llm, models: [m], timeout: 2s}
  - {<<: *llm, name: fallback, source: fallback}
  - {name: static, kind: static, message: hi}
`)
	if f := cfg.Tiers[1]; f.Name != "fallback" || f.Kind != "llm" || f.Timeout != 2*time.Second || f.LLM.Models[0] != "m" {
		t.Errorf("merged tier %+v", f)
	}
	_, err := Parse([]byte(`
models:
  m: {base_url: "http://x/v1"}
tiers:
  - &llm {name: primary, kind: llm, models: [m], timout: 2s}
  - {<<: *llm, name: fallback}
  - {name: static, kind: static}
`))
	if err == nil || !strings.Contains(err.Error(), "timout: unknown field") {
		t.Errorf("a misspelt field inside a merged mapping: %v", err)
	}
}

// TestReadmeConfigReference keeps the configuration reference in README.md
// true: its YAML must parse (no unknown field, no field of another kind)
// and validate.
func TestReadmeConfigReference(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Configuration reference")
	if !ok {
		t.Fatal("README.md has no configuration reference")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("the configuration reference has no yaml block")
	}
	block, _, _ = strings.Cut(block, "```")
	path := filepath.Join(t.TempDir(), "readme.yaml")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("README configuration reference: %v", err)
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("README configuration reference: %v", err)
	}
	if len(cfg.Tiers) != 6 || len(cfg.Models) != 3 || cfg.KnowledgeBase.Rerank == nil {
		t.Errorf("parsed %d tiers, %d models and rerank %v; want 6, 3 and a rerank", len(cfg.Tiers), len(cfg.Models), cfg.KnowledgeBase.Rerank)
	}
}
