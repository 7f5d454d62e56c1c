package pipeline

import (
	"context"
	"net/http"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// instantTier answers at once, allocating nothing.
type instantTier struct{}

func (instantTier) Name() string         { return "primary" }
func (instantTier) Source() tiers.Source { return tiers.SourcePrimary }
func (instantTier) Answer(context.Context, tiers.Query) (tiers.Answer, error) {
	return tiers.Answer{Text: "ok", Source: tiers.SourcePrimary}, nil
}

// BenchmarkAskOverhead measures the pipeline's own cost per question:
// admission, singleflight, breaker, time limiter, attempt record, result.
func BenchmarkAskOverhead(b *testing.B) {
	p, err := New(Options{Tiers: []Stage{{Tier: instantTier{}, Model: true}, {Tier: tiers.NewStatic("static", "")}},
		RateLimit: RateLimitConfig{TenantRPS: 1e9, GlobalRPS: 1e9}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	q := tiers.Query{Tenant: "acme", Question: "How do I return an item?"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Ask(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpstream compares one question through the pipeline (llm tier,
// go-openai, the llmtest server) with a bare go-openai call of the same
// prompt to the same server, in the same run.
func BenchmarkUpstream(b *testing.B) {
	srv := llmtest.NewServer(llmtest.Config{})
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer hc.CloseIdleConnections()
	client := tiers.NewClient(tiers.ClientConfig{BaseURL: srv.URL, APIKey: "k", HTTPClient: hc})
	ctx := context.Background()
	question := "How do I return an item?"

	b.Run("bare", func(b *testing.B) {
		cfg := openai.DefaultConfig("k")
		cfg.BaseURL = srv.URL
		cfg.HTTPClient = hc
		bare := openai.NewClientWithConfig(cfg)
		req := openai.ChatCompletionRequest{Model: "m", MaxTokens: 64, Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: tiers.DefaultSystemPrompt},
			{Role: openai.ChatMessageRoleUser, Content: "Documents:\n[1] Returns policy\nItems can be returned within 30 days of delivery.\n\n" +
				"[2] Shipping\nOrders ship within 2 business days.\n\nQuestion: " + question},
		}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := bare.CreateChatCompletion(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pipeline", func(b *testing.B) {
		llm := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Retriever: testKB, ContextDocs: 2,
			Candidates: []tiers.Candidate{{ID: "m", Client: client, MaxTokens: 64}}})
		p, err := New(Options{Tiers: []Stage{{Tier: llm, Model: true}, {Tier: tiers.NewStatic("static", "")}}})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		q := tiers.Query{Tenant: "acme", Question: question}
		b.ReportAllocs()
		for b.Loop() {
			res, err := p.Ask(ctx, q)
			if err != nil || res.Source != tiers.SourcePrimary {
				b.Fatal(res, err)
			}
		}
	})
}
