// Package config reads ragfuse's YAML configuration and assembles a
// running pipeline from it.
//
// # Reading
//
// Load reads a file and Parse a document: both fill the defaults
// (Config.Defaults) and validate (Config.Validate). Every error names the
// field's path and all are reported at once, joined, as *FieldError:
//
//	servr: unknown field
//	tiers[2].timeout: must be > 0
//	tiers[1].models[0]: unknown model "qwen-max"
//	tiers[2].top_k: not a field of an llm tier
//
// A duration needs its unit (5s, not 5); YAML anchors and merge keys
// (<<: *anchor) are followed. A value quoted in an error has the user
// information of a URL replaced by ***, and a key pasted where the name of
// its environment variable belongs is refused without being repeated.
// DecodeYAML applies the same checks to a document that embeds a
// configuration (a drill scenario), with paths below a prefix.
//
// # Tiers
//
// A tier is one flat YAML mapping ({name: cache, kind: semantic_cache,
// similarity: 0.92}); in Go its settings are the struct of its kind
// (Tier.LLM, Tier.Cache, Tier.Retrieval, Tier.Static) beside the fields
// every kind has (name, kind, timeout, reserve, breaker, bulkhead). A
// field of another kind is an error, in YAML and in a Config built in Go.
// The `kind` tag on a field of Tier says which kinds it belongs to.
//
// # Secrets
//
// The file holds only the names of environment variables. CheckEnv
// reports api_key_env and redis.url_env variables that are unset;
// ResolveKeys and ResolveAdminKeys read auth.keys and auth.admin_keys into
// the key -> tenant and key -> name maps the HTTP server takes (an admin key
// that is also a tenant's is refused). Values never appear in an error.
//
// # Building
//
// Build turns a Config into a *pipeline.Pipeline through pipeline.New: it
// opens the knowledge base (or takes Env.KnowledgeBase), makes one
// go-openai client per model, one cache and embedder shared by the cache
// tiers (blended into a hybrid retriever so a question is embedded once,
// its document vectors computed in the background with
// knowledge_base.min_relevance as its vector floor), a rerank client for
// knowledge_base.rerank (a model of kind rerank), and the stages with
// their breakers and bulkheads. A model's kind (chat, embedding, rerank)
// says where it may be used. With redis.url (or the URL in the variable
// redis.url_env) it opens a breaker/redisstore Store under redis.prefix,
// whose breakers, rate limits, cooldowns and knowledge-base reloads every
// instance shares (pipeline.Options.Cluster; redis.instance names the
// instance in the cluster's status), and, unless the semantic_cache tier
// says shared: false, shares the cache through package rediscache under
// the same prefix; the pipeline's Close closes both. An unreachable Redis
// does not fail Build: the pipeline runs on local state until Redis
// answers. Build takes its Config by value and never writes
// the caller's maps or slices, so one Config may build many pipelines at
// once. Env carries what is not in the file: the clock, the observer, the
// HTTP client, the environment, the tracer.
//
// knowledge_base.condense becomes the pipeline's tiers.Condenser, its
// model's client the one of its models: entry. The server: section other
// than request_timeout, the notes:, openai: and console: sections are the
// HTTP server's (package api), and tracing: says how the tracer is made
// (api.NewTracerProvider); cmd/ragfuse passes them on.
//
// # Tests
//
//	go test -race ./config/
//	RAGFUSE_REQUIRE_REDIS=1 go test -race -run 'Shared|Cluster' ./config/   # Redis on RAGFUSE_TEST_REDIS_URL
package config
