package main

import (
	"time"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// The demo's simulated models.
const (
	demoPrimary  = "demo-primary"
	demoFallback = "demo-fallback"
)

// demoModels lists the models the demo upstream serves.
var demoModels = []string{demoPrimary, demoFallback}

// newDemoUpstream starts the in-process simulated model upstream.
func newDemoUpstream() *llmtest.Server {
	return llmtest.NewServer(llmtest.Config{Models: demoModels, ChunkDelay: 15 * time.Millisecond})
}

// demoConfig is the configuration of the embedded demo, with its models
// served by the upstream at baseURL. Timeouts are short so a switched
// fault shows within seconds: a hung primary costs 2s per question until
// its breaker opens after two failures, and the breaker probes again
// after 15s.
func demoConfig(baseURL string) pipeline.Config {
	brk := func() *pipeline.BreakerConfig {
		return &pipeline.BreakerConfig{FailureThreshold: 2, Window: 20, MinimumCalls: 10, FailureRate: 0.5,
			OpenDuration: 15 * time.Second, HalfOpenMaxCalls: 1}
	}
	return pipeline.Config{
		Server: pipeline.ServerConfig{Addr: "127.0.0.1:8080", RequestTimeout: 6 * time.Second,
			MaxQuestionBytes: 4096, ShutdownGrace: 5 * time.Second, DefaultLanguage: "en"},
		Models: map[string]pipeline.ModelConfig{
			demoPrimary:  {BaseURL: baseURL, Model: demoPrimary},
			demoFallback: {BaseURL: baseURL, Model: demoFallback},
		},
		Tiers: []pipeline.TierConfig{
			{Name: "cache", Kind: "semantic_cache", Embedder: "hash", Similarity: 0.92, TTL: 10 * time.Minute,
				Timeout: 300 * time.Millisecond},
			{Name: "primary", Kind: "llm", Source: "primary", Models: []string{demoPrimary}, Timeout: 2 * time.Second,
				ContextDocs: 3, Breaker: brk()},
			{Name: "fallback", Kind: "llm", Source: "fallback", Models: []string{demoFallback}, Timeout: 2 * time.Second,
				ContextDocs: 3, Breaker: brk()},
			{Name: "retrieval", Kind: "retrieval", TopK: 3},
			{Name: "static", Kind: "static",
				Message: "Sorry, we cannot answer right now. Please try again later or contact customer service."},
		},
	}
}
