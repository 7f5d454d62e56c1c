package main

import (
	"time"

	"github.com/ragfuse/ragfuse/config"
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
func demoConfig(baseURL string) config.Config {
	brk := func() *config.Breaker {
		return &config.Breaker{FailureThreshold: 2, Window: 20, MinimumCalls: 10, FailureRate: 0.5,
			OpenDuration: 15 * time.Second, HalfOpenMaxCalls: 1}
	}
	return config.Config{
		Server: config.Server{Addr: "127.0.0.1:8080", RequestTimeout: 6 * time.Second,
			MaxQuestionBytes: 4096, ShutdownGrace: 5 * time.Second, DefaultLanguage: "en"},
		// The questions are the newcomer's own: the console shows them.
		Console: config.Console{ShowQuestions: true},
		Models: map[string]config.Model{
			demoPrimary:  {BaseURL: baseURL, Model: demoPrimary},
			demoFallback: {BaseURL: baseURL, Model: demoFallback},
		},
		Tiers: []config.Tier{
			{Name: "cache", Kind: config.KindSemanticCache, Timeout: 300 * time.Millisecond,
				Cache: config.CacheTier{Embedder: "hash", Similarity: 0.92, TTL: 10 * time.Minute}},
			{Name: "primary", Kind: config.KindLLM, Timeout: 2 * time.Second, Breaker: brk(),
				LLM: config.LLMTier{Source: "primary", Models: []string{demoPrimary}, ContextDocs: 3}},
			{Name: "fallback", Kind: config.KindLLM, Timeout: 2 * time.Second, Breaker: brk(),
				LLM: config.LLMTier{Source: "fallback", Models: []string{demoFallback}, ContextDocs: 3}},
			{Name: "retrieval", Kind: config.KindRetrieval, Retrieval: config.RetrievalTier{TopK: 3}},
			{Name: "static", Kind: config.KindStatic, Static: config.StaticTier{
				Message: "Sorry, we cannot answer right now. Please try again later or contact customer service."}},
		},
	}
}
