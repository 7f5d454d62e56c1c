package pipeline_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// Example embeds the pipeline in a Go program: a primary and a fallback
// model (here a simulated OpenAI-compatible upstream), the knowledge base,
// and a static message. When the primary model fails, the fallback answers
// and the result says so.
func Example() {
	upstream := llmtest.NewServer(llmtest.Config{})
	defer upstream.Close()
	client := tiers.NewClient(tiers.ClientConfig{BaseURL: upstream.URL, APIKey: "demo"})

	kb, err := retrieval.New([]retrieval.Doc{
		{ID: "returns", Title: "Returns policy", Text: "Items can be returned within 30 days of delivery."},
		{ID: "shipping", Title: "Shipping", Text: "Orders ship within 2 business days."},
	})
	if err != nil {
		panic(err)
	}
	p, err := pipeline.New(pipeline.Options{
		RequestTimeout: 5 * time.Second,
		Tiers: []pipeline.Stage{
			{Tier: tiers.NewLLM(tiers.LLMConfig{Name: "primary", Source: tiers.SourcePrimary, Retriever: kb,
				Candidates: []tiers.Candidate{{ID: "qwen3-max", Client: client}}}), Model: true, Timeout: 2 * time.Second},
			{Tier: tiers.NewLLM(tiers.LLMConfig{Name: "fallback", Source: tiers.SourceFallback, Retriever: kb,
				Candidates: []tiers.Candidate{{ID: "qwen-turbo", Client: client}}}), Model: true, Timeout: time.Second},
			{Tier: tiers.NewRetrieval(tiers.RetrievalConfig{Retriever: kb}), Timeout: 500 * time.Millisecond},
			{Tier: tiers.NewStatic("static", "")},
		},
	})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	q := tiers.Query{Tenant: "acme", Question: "How do I return an item?"}
	res, err := p.Ask(context.Background(), q)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Source, res.Degraded, res.Text)

	upstream.SetFault("qwen3-max", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
	res, err = p.Ask(context.Background(), q)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Source, res.Degraded, res.Text)
	for _, a := range res.Attempts {
		fmt.Println(" ", a.Tier, a.Model, a.Outcome, a.Error)
	}
	// Output:
	// primary false [qwen3-max] According to Returns policy, this is a simulated answer to: How do I return an item?
	// fallback true [qwen-turbo] According to Returns policy, this is a simulated answer to: How do I return an item?
	//   primary qwen3-max server_error HTTP 503
	//   fallback qwen-turbo success
}
