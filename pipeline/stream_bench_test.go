package pipeline

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// BenchmarkStreamChunks compares one streamed answer through
// Pipeline.Stream (llm tier, watchdog timers, events; and with a commit
// time) with reading the same llmtest stream directly with go-openai, in
// the same run. All report ns per chunk.
func BenchmarkStreamChunks(b *testing.B) {
	srv := llmtest.NewServer(llmtest.Config{})
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer hc.CloseIdleConnections()
	ctx := context.Background()
	question := "How do I return an item that arrived damaged in the post last week?"

	b.Run("direct", func(b *testing.B) {
		cfg := openai.DefaultConfig("k")
		cfg.BaseURL = srv.URL
		cfg.HTTPClient = hc
		client := openai.NewClientWithConfig(cfg)
		req := openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: tiers.DefaultSystemPrompt},
			{Role: openai.ChatMessageRoleUser, Content: "No documents were found for this question.\n\nQuestion: " + question},
		}, StreamOptions: &openai.StreamOptions{IncludeUsage: true}}
		chunks := 0
		b.ReportAllocs()
		for b.Loop() {
			st, err := client.CreateChatCompletionStream(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			for {
				r, err := st.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				if len(r.Choices) > 0 && r.Choices[0].Delta.Content != "" {
					chunks++
				}
			}
			_ = st.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(chunks), "ns/chunk")
	})
	pipelineRun := func(sc StreamConfig) func(b *testing.B) {
		return func(b *testing.B) {
			client := tiers.NewClient(tiers.ClientConfig{BaseURL: srv.URL, APIKey: "k", HTTPClient: hc})
			llm := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Candidates: []tiers.Candidate{{ID: "m", Client: client}}})
			p, err := New(Options{Tiers: []Stage{
				{Tier: llm, Model: true, Stream: sc},
				{Tier: tiers.NewStatic("static", "")},
			}})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			q := tiers.Query{Tenant: "acme", Question: question}
			chunks := 0
			count := func(e StreamEvent) error {
				if e.Kind == StreamDelta {
					chunks++
				}
				return nil
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := p.Stream(ctx, q, count)
				if err != nil || res.Source != tiers.SourcePrimary {
					b.Fatal(res, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(chunks), "ns/chunk")
		}
	}
	b.Run("pipeline", pipelineRun(StreamConfig{FirstTokenTimeout: 5e9, StallTimeout: 5e9}))
	// A commit time reads the stream on a goroutine of its own; commit_after
	// 1 still commits at the first text, so every chunk is a delta.
	b.Run("pipeline-held", pipelineRun(StreamConfig{FirstTokenTimeout: 5e9, StallTimeout: 5e9,
		CommitAfter: 1, CommitAfterDuration: time.Minute}))
}
