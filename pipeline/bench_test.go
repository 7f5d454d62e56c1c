package pipeline

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
	openai "github.com/sashabaranov/go-openai"
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
// prompt to the same server, in the same run. "paired" alternates the two
// in every iteration and reports each one's mean time and their ratio, so
// that load on a shared machine hits both alike.
func BenchmarkUpstream(b *testing.B) {
	srv := llmtest.NewServer(llmtest.Config{})
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer hc.CloseIdleConnections()
	client := tiers.NewClient(tiers.ClientConfig{BaseURL: srv.URL, APIKey: "k", HTTPClient: hc})
	ctx := context.Background()
	question := "How do I return an item?"

	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = srv.URL
	cfg.HTTPClient = hc
	bare := openai.NewClientWithConfig(cfg)
	req := openai.ChatCompletionRequest{Model: "m", MaxTokens: 64, Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: tiers.DefaultSystemPrompt},
		{Role: openai.ChatMessageRoleUser, Content: "Documents:\n[1] Returns policy\nItems can be returned within 30 days of delivery.\n\n" +
			"[2] Shipping\nOrders ship within 2 business days.\n\nQuestion: " + question},
	}}
	callBare := func(b *testing.B) {
		if _, err := bare.CreateChatCompletion(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	llm := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Retriever: testKB, ContextDocs: 2,
		Candidates: []tiers.Candidate{{ID: "m", Client: client, MaxTokens: 64}}})
	p, err := New(Options{Tiers: []Stage{{Tier: llm, Model: true}, {Tier: tiers.NewStatic("static", "")}}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	q := tiers.Query{Tenant: "acme", Question: question}
	callPipeline := func(b *testing.B) {
		res, err := p.Ask(ctx, q)
		if err != nil || res.Source != tiers.SourcePrimary {
			b.Fatal(res, err)
		}
	}

	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			callBare(b)
		}
	})
	b.Run("pipeline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			callPipeline(b)
		}
	})
	b.Run("paired", func(b *testing.B) { pairUpstream(b, callBare, callPipeline) })
	// paired-same pairs the bare call with itself: the spread of a set's
	// ratio on the machine, with no overhead to measure.
	b.Run("paired-same", func(b *testing.B) { pairUpstream(b, callBare, callBare) })
	// paired-client pairs the bare call with the same call through the
	// llm tier's client (tiers.NewClient over the same http.Client, which
	// also records the Retry-After of a 429); paired-guards pairs that
	// call with the question through the pipeline: the pipeline's own
	// cost, over the same client.
	viaClient := func(b *testing.B) {
		if _, err := client.CreateChatCompletion(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("paired-client", func(b *testing.B) { pairUpstream(b, callBare, viaClient) })
	b.Run("paired-guards", func(b *testing.B) { pairUpstream(b, viaClient, callPipeline) })
	// paired-tier asks the llm tier alone, with no pipeline around it: the
	// cost of the documents, the prompt and the tier's own client.
	b.Run("paired-tier", func(b *testing.B) {
		callTier := func(b *testing.B) {
			if a, err := llm.Answer(ctx, q); err != nil || a.Source != tiers.SourcePrimary {
				b.Fatal(a, err)
			}
		}
		pairUpstream(b, callBare, callTier)
	})
	// paired-deadline gives the bare call the deadline that any production
	// call carries (and that the pipeline's time limiter sets), so that both
	// sides pay net/http's cost of a cancellable request.
	b.Run("paired-deadline", func(b *testing.B) {
		callBareDeadline := func(b *testing.B) {
			c, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if _, err := bare.CreateChatCompletion(c, req); err != nil {
				b.Fatal(err)
			}
		}
		pairUpstream(b, callBareDeadline, callPipeline)
	})
	// paired-floor asks the llm tier alone under a deadline: the least a
	// guarded question costs over a bare call (the RAG prompt, and the
	// cancellable request a time limiter makes), with no breaker, admission,
	// singleflight or attempt record.
	b.Run("paired-floor", func(b *testing.B) {
		callTierDeadline := func(b *testing.B) {
			c, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if a, err := llm.Answer(c, q); err != nil || a.Source != tiers.SourcePrimary {
				b.Fatal(a, err)
			}
		}
		pairUpstream(b, callBare, callTierDeadline)
	})
	// paired-1ms is paired against a model that takes 1 ms to answer, the
	// least any real model takes: the overhead stays the same few
	// microseconds, and the ratio shows what it weighs then.
	b.Run("paired-1ms", func(b *testing.B) {
		srv.SetFault("m", llmtest.Fault{Mode: llmtest.ModeLatency, Delay: time.Millisecond})
		defer srv.SetFault("m", llmtest.Fault{})
		pairUpstream(b, callBare, callPipeline)
	})
}

// pairUpstream alternates callBare and callOther in every iteration and
// reports each one's mean time, the difference (other's overhead) and
// their ratio, other/bare.
func pairUpstream(b *testing.B, callBare, callOther func(*testing.B)) {
	var tBare, tOther time.Duration
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first, so neither always meets a warm
		// or a cold connection.
		first, second := callBare, callOther
		if i%2 == 1 {
			first, second = callOther, callBare
		}
		t0 := time.Now()
		first(b)
		t1 := time.Now()
		second(b)
		t2 := time.Now()
		if i%2 == 0 {
			tBare, tOther = tBare+t1.Sub(t0), tOther+t2.Sub(t1)
		} else {
			tOther, tBare = tOther+t1.Sub(t0), tBare+t2.Sub(t1)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(tBare.Nanoseconds())/n, "bare-ns/op")
	b.ReportMetric(float64(tOther.Nanoseconds())/n, "other-ns/op")
	b.ReportMetric(float64((tOther-tBare).Nanoseconds())/n, "overhead-ns/op")
	b.ReportMetric(float64(tOther)/float64(tBare), "ratio")
}

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
