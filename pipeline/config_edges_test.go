package pipeline

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRedisOpTimeoutNegativeRefused: a negative redis.op_timeout is a bad
// value and must fail with its path, not silently become the default.
func TestRedisOpTimeoutNegativeRefused(t *testing.T) {
	_, err := ParseConfig([]byte("redis: {op_timeout: -1s}\ntiers: [{kind: static}]"))
	if err == nil || !strings.Contains(err.Error(), "redis.op_timeout: must be >= 0") {
		t.Fatalf("err = %v, want redis.op_timeout named", err)
	}
}

// TestAPIKeyEnvValueNotEchoed: a key pasted into api_key_env or key_env
// by mistake (instead of the variable's name) must not be repeated in the
// error, which serve prints and logs.
func TestAPIKeyEnvValueNotEchoed(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	for _, yml := range []string{
		"models: {m: {base_url: \"http://127.0.0.1:1/v1\", api_key_env: \"" + secret + "\"}}\ntiers: [{kind: llm, models: [m]}, {kind: static}]",
		"auth: {keys: [{key_env: \"" + secret + "\", tenant: acme}]}\ntiers: [{kind: static}]",
	} {
		_, err := ParseConfig([]byte(yml))
		if err == nil || !strings.Contains(err.Error(), "key_env: must be the name of an environment variable") {
			t.Fatalf("err = %v, want the key_env field named", err)
		}
		if strings.Contains(err.Error(), "0123456789abcdef") {
			t.Fatalf("the error repeats the key: %v", err)
		}
	}
	// Build checks the Config it is given as well.
	cfg := Config{Models: map[string]ModelConfig{"m": {BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: secret}},
		Tiers: []TierConfig{{Kind: KindLLM, Models: []string{"m"}}, {Kind: KindStatic}}}
	_, err := Build(cfg, BuildEnv{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "models.m.api_key_env") || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Fatalf("err = %v", err)
	}
	// A real variable name is still named.
	cfg.Models["m"] = ModelConfig{BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "DASHSCOPE_API_KEY"}
	_, err = Build(cfg, BuildEnv{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "environment variable DASHSCOPE_API_KEY is not set") {
		t.Fatalf("err = %v", err)
	}
}

// TestBuildConcurrentSameConfig: Build takes the Config by value; two
// pipelines built at once from one Config must not race on its models map
// and tiers slice (run with -race).
func TestBuildConcurrentSameConfig(t *testing.T) {
	cfg := Config{
		Models: map[string]ModelConfig{"m": {BaseURL: "http://127.0.0.1:1/v1"}},
		Tiers:  []TierConfig{{Kind: KindLLM, Models: []string{"m"}, Bulkhead: &BulkheadConfig{MaxConcurrent: 1}}, {Kind: KindStatic}},
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := Build(cfg, BuildEnv{Getenv: func(string) string { return "" }})
			if err == nil {
				_ = p.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if cfg.Tiers[0].Name != "" || cfg.Models["m"].MaxTokens != 0 || cfg.Tiers[0].Bulkhead.QueueTimeout != 0 {
		t.Fatalf("Build changed the caller's config: %+v", cfg)
	}
}

// TestBulkheadQueueTimeoutDefault: README documents queue_timeout 2s as
// the default of a configured bulkhead; without it max_queue was ignored
// (a queued call was refused at once).
func TestBulkheadQueueTimeoutDefault(t *testing.T) {
	cfg, err := ParseConfig([]byte("tiers: [{kind: static, bulkhead: {max_concurrent: 1, max_queue: 5}}]"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Tiers[0].Bulkhead.QueueTimeout; got != 2*time.Second {
		t.Fatalf("queue_timeout = %v, want the documented 2s", got)
	}
	p, err := Build(cfg, BuildEnv{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.stages[0].bulk.queueTimeout; got != 2*time.Second {
		t.Fatalf("bulkhead queue timeout %v, want 2s", got)
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
		_, err := ParseConfig([]byte(body + "\ntiers: [{name: s, kind: static}]\n"))
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
	cfg, err := ParseConfig([]byte(`
models:
  m: {base_url: "http://x/v1"}
tiers:
  - &llm {name: primary, kind: llm, models: [m], timeout: 2s}
  - {<<: *llm, name: fallback, source: fallback}
  - {name: static, kind: static, message: hi}
`))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if f := cfg.Tiers[1]; f.Name != "fallback" || f.Kind != "llm" || f.Timeout != 2*time.Second {
		t.Errorf("merged tier %+v", f)
	}
	_, err = ParseConfig([]byte(`
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
