package config

import (
	"errors"
	"strings"
	"testing"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	const models = "models: {m: {base_url: \"http://127.0.0.1:1/v1\"}}\n"
	const rerankModels = "models: {r: {base_url: \"http://127.0.0.1:1/v1\", kind: rerank}}\n"
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
		{"negative request timeout", "server: {request_timeout: -1s}\ntiers: [{kind: static}]", "server.request_timeout: must be > 0"},
		{"negative question bytes", "server: {max_question_bytes: -1}\ntiers: [{kind: static}]", "server.max_question_bytes: must be > 0"},
		{"negative body bytes", "server: {max_body_bytes: -1}\ntiers: [{kind: static}]", "server.max_body_bytes: must be > 0"},
		{"language", "server: {default_language: fr}\ntiers: [{kind: static}]", `server.default_language: must be "zh" or "en"`},
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
		{"hedge_after", models + "tiers: [{kind: llm, models: [m], hedge_after: -1s}, {kind: llm, models: [m]}]", "tiers[0].hedge_after: must be >= 0"},
		{"hedge without a later llm tier", models + "tiers: [{kind: llm, models: [m], hedge_after: 2s}, {kind: static}]", "tiers[0].hedge_after: needs a later llm tier to hedge with"},
		{"hedge_budget", models + "tiers: [{kind: llm, models: [m], hedge_budget: 1.5}]", "tiers[0].hedge_budget: must be in (0, 1]"},
		{"negative hedge_budget", models + "tiers: [{kind: llm, models: [m], hedge_budget: -0.1}]", "tiers[0].hedge_budget: must be in (0, 1]"},
		{"hedge_after on a retrieval tier", "tiers: [{kind: retrieval, hedge_after: 1s}]", "tiers[0].hedge_after: not a field of a retrieval tier"},
		{"on_stream_break", models + "tiers: [{kind: llm, models: [m], on_stream_break: retry}]", `tiers[0].on_stream_break: must be "note" or "continue"`},
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
		{"auth key without tenant", "auth: {keys: [{key_env: K}]}\ntiers: [{kind: static}]", "auth.keys[0].tenant: is required"},
		{"probe interval", "models: {m: {base_url: \"http://x/v1\", probe: {interval: -1s}}}\ntiers: [{kind: static}]", "models.m.probe.interval: must be > 0"},
		{"probe timeout", "models: {m: {base_url: \"http://x/v1\", probe: {interval: 1s, timeout: 2s}}}\ntiers: [{kind: static}]", "models.m.probe.timeout: must be <= probe.interval"},
		{"probe field", "models: {m: {base_url: \"http://x/v1\", probe: {every: 1s}}}\ntiers: [{kind: static}]", "models.m.probe.every: unknown field"},
		{"probe duration", "models: {m: {base_url: \"http://x/v1\", probe: {interval: 10}}}\ntiers: [{kind: static}]", "models.m.probe.interval: want a duration with a unit"},
		{"model kind", "models: {m: {base_url: \"http://x/v1\", kind: vision}}\ntiers: [{kind: static}]", `models.m.kind: must be "chat", "embedding" or "rerank"`},
		{"rerank model as llm", rerankModels + "tiers: [{kind: llm, models: [r]}]", `tiers[0].models[0]: model "r" is of kind "rerank", not chat`},
		{"rerank model as embedder", rerankModels + "tiers: [{kind: semantic_cache, embedder: r}]", `tiers[0].embedder: model "r" is of kind rerank`},
		{"rerank without model", "knowledge_base: {rerank: {timeout: 1s}}\ntiers: [{kind: static}]", "knowledge_base.rerank.model: is required"},
		{"rerank unknown model", "knowledge_base: {rerank: {model: nope}}\ntiers: [{kind: static}]", `knowledge_base.rerank.model: unknown model "nope"`},
		{"rerank chat model", models + "knowledge_base: {rerank: {model: m}}\ntiers: [{kind: static}]", `knowledge_base.rerank.model: model "m" is of kind "chat", not rerank`},
		{"rerank candidates", rerankModels + "knowledge_base: {rerank: {model: r, candidates: -1}}\ntiers: [{kind: static}]", "knowledge_base.rerank.candidates: must be > 0"},
		{"rerank timeout", rerankModels + "knowledge_base: {rerank: {model: r, timeout: -1s}}\ntiers: [{kind: static}]", "knowledge_base.rerank.timeout: must be > 0"},
		{"rerank min_score", rerankModels + "knowledge_base: {rerank: {model: r, min_score: .nan}}\ntiers: [{kind: static}]", "knowledge_base.rerank.min_score: must be a finite number"},
		{"unknown rerank field", rerankModels + "knowledge_base: {rerank: {model: r, top_n: 3}}\ntiers: [{kind: static}]", "knowledge_base.rerank.top_n: unknown field"},
		{"min_relevance", "knowledge_base: {min_relevance: .inf}\ntiers: [{kind: static}]", "knowledge_base.min_relevance: must be a finite number"},
		{"otlp endpoint", "tracing: {otlp_endpoint: \"collector:4318\"}\ntiers: [{kind: static}]", "tracing.otlp_endpoint: must be an http or https URL"},
		{"otlp endpoint with user", "tracing: {otlp_endpoint: \"http://u:p@x:4318\"}\ntiers: [{kind: static}]", "tracing.otlp_endpoint: must be an http or https URL without user"},
		{"sample ratio", "tracing: {sample_ratio: 1.5}\ntiers: [{kind: static}]", "tracing.sample_ratio: must be in (0, 1]"},
		{"negative sample ratio", "tracing: {sample_ratio: -0.1}\ntiers: [{kind: static}]", "tracing.sample_ratio: must be in (0, 1]"},
		{"unknown tracing field", "tracing: {endpoint: x}\ntiers: [{kind: static}]", "tracing.endpoint: unknown field"},
		{"unknown console field", "console: {show_question: true}\ntiers: [{kind: static}]", "console.show_question: unknown field"},
		{"admin key without name", "auth: {admin_keys: [{key_env: K}]}\ntiers: [{kind: static}]", "auth.admin_keys[0].name: must be 1-64 characters"},
		{"admin key name twice", "auth: {admin_keys: [{key_env: K, name: ops}, {key_env: L, name: ops}]}\ntiers: [{kind: static}]", `auth.admin_keys[1].name: "ops" names an earlier admin key`},
		{"admin key pasted", "auth: {admin_keys: [{key_env: \"sk-x\", name: ops}]}\ntiers: [{kind: static}]", "auth.admin_keys[0].key_env: " + NotEnvName},
		{"redis url and url_env", "redis: {url: \"redis://127.0.0.1:6379\", url_env: REDIS_URL}\ntiers: [{kind: static}]", "redis.url_env: set redis.url or redis.url_env, not both"},
		{"redis url_env pasted", "redis: {url_env: \"redis://x\"}\ntiers: [{kind: static}]", "redis.url_env: " + NotEnvName},
		{"negative read timeout", "server: {read_timeout: -1s}\ntiers: [{kind: static}]", "server.read_timeout: must be > 0"},
		{"negative idle timeout", "server: {idle_timeout: -1s}\ntiers: [{kind: static}]", "server.idle_timeout: must be > 0"},
		{"negative max connections", "server: {max_connections: -1}\ntiers: [{kind: static}]", "server.max_connections: must be > 0"},
		{"negative max tenants", "tiers: [{kind: semantic_cache, max_tenants: -1}]", "tiers[0].max_tenants: must be > 0"},
		{"negative retrieval timeout", "knowledge_base: {timeout: -1s}\ntiers: [{kind: static}]", "knowledge_base.timeout: must be > 0"},
		{"negative history turns", "server: {max_history_turns: -1}\ntiers: [{kind: static}]", "server.max_history_turns: must be > 0"},
		{"negative history bytes", "server: {max_history_bytes: -1}\ntiers: [{kind: static}]", "server.max_history_bytes: must be > 0"},
		{"tier history turns", models + "tiers: [{kind: llm, models: [m], history_turns: -2}]", "tiers[0].history_turns: must be >= 0"},
		{"history turns on retrieval", "tiers: [{kind: retrieval, history_turns: 2}]", "tiers[0].history_turns: not a field of a retrieval tier"},
		{"condense without model", "knowledge_base: {condense: {timeout: 1s}}\ntiers: [{kind: static}]", "knowledge_base.condense.model: is required"},
		{"condense model unknown", models + "knowledge_base: {condense: {model: nope}}\ntiers: [{kind: static}]", `knowledge_base.condense.model: unknown model "nope"`},
		{"condense timeout", models + "knowledge_base: {condense: {model: m, timeout: -1s}}\ntiers: [{kind: static}]", "knowledge_base.condense.timeout: must be > 0"},
		{"condense unknown field", models + "knowledge_base: {condense: {model: m, prompt: x}}\ntiers: [{kind: static}]", "knowledge_base.condense.prompt: unknown field"},
		{"note_in_content", "openai: {note_in_content: maybe}\ntiers: [{kind: static}]", "openai.note_in_content"},
		{"not yaml", "tiers: [", "config: yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
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

// TestTierFieldOfAnotherKind: a tier's settings are those of its kind; a
// field of another kind is an error with its path, whether it comes from
// the YAML (directly or through a merge key) or from a Config built in Go.
func TestTierFieldOfAnotherKind(t *testing.T) {
	const models = "models: {m: {base_url: \"http://127.0.0.1:1/v1\"}}\n"
	const rerankModels = "models: {r: {base_url: \"http://127.0.0.1:1/v1\", kind: rerank}}\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"top_k on llm", models + "tiers: [{kind: static}, {kind: static, name: s2}, {kind: llm, models: [m], top_k: 3}]",
			"tiers[2].top_k: not a field of an llm tier"},
		{"models on retrieval", "tiers: [{kind: retrieval, models: [m]}]", "tiers[0].models: not a field of a retrieval tier"},
		{"source on static", "tiers: [{kind: static, source: primary}]", "tiers[0].source: not a field of a static tier"},
		{"embedder on static", "tiers: [{kind: static, embedder: hash}]", "tiers[0].embedder: not a field of a static tier"},
		{"message on llm", models + "tiers: [{kind: llm, models: [m], message: hi}]", "tiers[0].message: not a field of an llm tier"},
		{"context_docs on cache", "tiers: [{kind: semantic_cache, context_docs: 2}]", "tiers[0].context_docs: not a field of a semantic_cache tier"},
		{"grace on semantic_cache", "tiers: [{kind: semantic_cache, grace: 1h}]", "tiers[0].grace: not a field of a semantic_cache tier"},
		{"store_from on stale_cache", "tiers: [{kind: stale_cache, store_from: [primary]}]", "tiers[0].store_from: not a field of a stale_cache tier"},
		{"merged into another kind", models + "tiers:\n  - &l {kind: llm, models: [m], context_docs: 2}\n  - {<<: *l, kind: retrieval, name: r}",
			"tiers[1].context_docs: not a field of a retrieval tier"},
		{"kind from the merge", "tiers:\n  - &r {kind: retrieval, name: r1}\n  - {<<: *r, name: r2, stall_timeout: 1s}",
			"tiers[1].stall_timeout: not a field of a retrieval tier"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			var fe *FieldError
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *FieldError %q", err, tt.want)
			}
		})
	}

	// Fields every kind has, and the settings of the tier's own kind, pass.
	mustParse(t, models+`knowledge_base: {path: kb}
tiers:
  - {kind: semantic_cache, embedder: hash, similarity: 0.9, ttl: 1h, max_entries: 5, store_from: [fallback], timeout: 1s}
  - {kind: llm, models: [m], source: primary, context_docs: 1, prompt: p, first_token_timeout: 1s, stall_timeout: 1s,
     commit_after: 3, commit_after_duration: 1s, on_stream_break: continue, continue_prompt: c, reserve: 1s,
     hedge_after: 2500ms, hedge_budget: 0.2}
  - {kind: llm, models: [m], name: backup}
  - {kind: stale_cache, embedder: hash, similarity: 0.9, ttl: 1h, max_entries: 5, grace: 2h, breaker: {window: 3}}
  - {kind: retrieval, top_k: 2, bulkhead: {max_concurrent: 1}}
  - {kind: static, message: hi, name: last}`)

	// An unknown kind is reported as such, not field by field.
	_, err := Parse([]byte("tiers: [{kind: oracle, top_k: 3}]"))
	if err == nil || !strings.Contains(err.Error(), `unknown kind "oracle"`) || strings.Contains(err.Error(), "not a field") {
		t.Fatalf("err = %v", err)
	}

	// A Config built in Go is checked the same way.
	cfg := Config{Tiers: []Tier{{Kind: KindStatic, Retrieval: RetrievalTier{TopK: 3}, LLM: LLMTier{Prompt: "p"}}}}
	_, err = Build(cfg, Env{})
	for _, want := range []string{"tiers[0].prompt: not a field of a static tier", "tiers[0].top_k: not a field of a static tier"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}

// TestRedisOpTimeoutNegativeRefused: a negative redis.op_timeout is a bad
// value and must fail with its path, not silently become the default.
func TestRedisOpTimeoutNegativeRefused(t *testing.T) {
	_, err := Parse([]byte("redis: {op_timeout: -1s}\ntiers: [{kind: static}]"))
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
		_, err := Parse([]byte(yml))
		if err == nil || !strings.Contains(err.Error(), "key_env: must be the name of an environment variable") {
			t.Fatalf("err = %v, want the key_env field named", err)
		}
		if strings.Contains(err.Error(), "0123456789abcdef") {
			t.Fatalf("the error repeats the key: %v", err)
		}
	}
	// Build checks the Config it is given as well.
	cfg := Config{Models: map[string]Model{"m": {BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: secret}},
		Tiers: []Tier{{Kind: KindLLM, LLM: LLMTier{Models: []string{"m"}}}, {Kind: KindStatic}}}
	_, err := Build(cfg, Env{Getenv: noEnv})
	if err == nil || !strings.Contains(err.Error(), "models.m.api_key_env") || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Fatalf("err = %v", err)
	}
	// A real variable name is still named.
	cfg.Models["m"] = Model{BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "DASHSCOPE_API_KEY"}
	_, err = Build(cfg, Env{Getenv: noEnv})
	if err == nil || !strings.Contains(err.Error(), "environment variable DASHSCOPE_API_KEY is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestResolveKeys(t *testing.T) {
	env := map[string]string{"K_ACME": "sk-acme-secret", "K_BETA": " sk-beta ", "K_DUP": "sk-acme-secret"}
	getenv := func(k string) string { return env[k] }

	keys, err := ResolveKeys(Auth{Keys: []AuthKey{
		{KeyEnv: "K_ACME", Tenant: "acme"}, {KeyEnv: "K_BETA", Tenant: "beta"},
	}}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if keys["sk-acme-secret"] != "acme" || keys["sk-beta"] != "beta" || len(keys) != 2 {
		t.Fatalf("keys = %v", keys)
	}

	for name, tc := range map[string]struct {
		keys []AuthKey
		want string
	}{
		"unset":       {[]AuthKey{{KeyEnv: "K_ACME", Tenant: "acme"}, {KeyEnv: "K_NONE", Tenant: "x"}}, "auth.keys[1].key_env: environment variable K_NONE is empty or unset"},
		"no env":      {[]AuthKey{{Tenant: "acme"}}, "auth.keys[0].key_env: required"},
		"bad tenant":  {[]AuthKey{{KeyEnv: "K_ACME", Tenant: "a/b"}}, "auth.keys[0].tenant"},
		"long tenant": {[]AuthKey{{KeyEnv: "K_ACME", Tenant: strings.Repeat("t", 65)}}, "auth.keys[0].tenant"},
		"newline":     {[]AuthKey{{KeyEnv: "K_ACME", Tenant: "acme\n"}}, "auth.keys[0].tenant"},
		"duplicate":   {[]AuthKey{{KeyEnv: "K_ACME", Tenant: "acme"}, {KeyEnv: "K_DUP", Tenant: "beta"}}, "auth.keys[1].key_env: K_DUP holds the same key"},
		// A key pasted where its variable's name belongs is refused
		// without being repeated.
		"pasted key": {[]AuthKey{{KeyEnv: "sk-pasted-secret", Tenant: "acme"}}, "auth.keys[0].key_env: " + NotEnvName},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ResolveKeys(Auth{Keys: tc.keys}, getenv)
			var fe *FieldError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &fe) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "sk-") {
				t.Fatalf("error leaks a key: %v", err)
			}
		})
	}
}

func TestTracingAndConsoleSections(t *testing.T) {
	c, err := Parse([]byte("tracing: {otlp_endpoint: \"http://127.0.0.1:4318\", sample_ratio: 0.25}\nconsole: {show_questions: true}\ntiers: [{kind: static}]"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tracing != (Tracing{OTLPEndpoint: "http://127.0.0.1:4318", ServiceName: "ragfuse", SampleRatio: 0.25}) || !c.Console.ShowQuestions {
		t.Errorf("tracing %+v, console %+v", c.Tracing, c.Console)
	}
	c, err = Parse([]byte("tiers: [{kind: static}]"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tracing != (Tracing{ServiceName: "ragfuse", SampleRatio: 1}) || c.Console.ShowQuestions {
		t.Errorf("defaults: tracing %+v, console %+v", c.Tracing, c.Console)
	}
}

func TestResolveAdminKeys(t *testing.T) {
	env := map[string]string{"K_ACME": "sk-acme-secret", "K_OPS": " sk-ops-secret ", "K_OPS2": "sk-ops-2", "K_SAME": "sk-ops-secret"}
	getenv := func(k string) string { return env[k] }
	auth := Auth{Keys: []AuthKey{{KeyEnv: "K_ACME", Tenant: "acme"}},
		AdminKeys: []AdminKey{{KeyEnv: "K_OPS", Name: "ops"}, {KeyEnv: "K_OPS2", Name: "oncall"}}}
	keys, err := ResolveAdminKeys(auth, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if keys["sk-ops-secret"] != "ops" || keys["sk-ops-2"] != "oncall" || len(keys) != 2 {
		t.Fatalf("keys = %v", keys)
	}
	for name, tc := range map[string]struct {
		admin []AdminKey
		want  string
	}{
		"unset":      {[]AdminKey{{KeyEnv: "K_NONE", Name: "ops"}}, "auth.admin_keys[0].key_env: environment variable K_NONE is empty or unset"},
		"tenant key": {[]AdminKey{{KeyEnv: "K_ACME", Name: "ops"}}, "auth.admin_keys[0].key_env: K_ACME holds a tenant's key"},
		"twice":      {[]AdminKey{{KeyEnv: "K_OPS", Name: "ops"}, {KeyEnv: "K_SAME", Name: "b"}}, "auth.admin_keys[1].key_env: K_SAME holds the same key"},
		"bad name":   {[]AdminKey{{KeyEnv: "K_OPS", Name: "ops team"}}, "auth.admin_keys[0].name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ResolveAdminKeys(Auth{Keys: auth.Keys, AdminKeys: tc.admin}, getenv)
			var fe *FieldError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &fe) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "sk-") {
				t.Fatalf("error leaks a key: %v", err)
			}
		})
	}
}
