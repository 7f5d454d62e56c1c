package config

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
)

// The shared store (Redis) and the llmtest servers run goroutines: every
// one must be gone when the tests end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testDocs is a small knowledge base about returns and shipping.
var testDocs = []retrieval.Doc{
	{ID: "returns", Title: "Returns policy", Text: "Items can be returned within 30 days of delivery.", Score: 3},
	{ID: "shipping", Title: "Shipping", Text: "Orders ship within 2 business days.", Score: 2},
}

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// noEnv is a Getenv that finds no variable set.
func noEnv(string) string { return "" }

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []pipeline.Event
}

func (r *recorder) Observe(e pipeline.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) count(k pipeline.EventKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// outcomes returns "tier/model:outcome" for each attempt.
func outcomes(res *pipeline.Result) []string {
	var out []string
	for _, a := range res.Attempts {
		s := a.Tier
		if a.Model != "" {
			s += "/" + a.Model
		}
		out = append(out, s+":"+a.Outcome)
	}
	return out
}

func ask(t *testing.T, p *pipeline.Pipeline, q string) *pipeline.Result {
	t.Helper()
	res, err := p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: q})
	if err != nil {
		t.Fatalf("Ask(%q): %v", q, err)
	}
	return res
}

// mustParse parses yml, failing the test on an error.
func mustParse(t testing.TB, yml string) Config {
	t.Helper()
	cfg, err := Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// mustBuild builds cfg, closing the pipeline when the test ends.
func mustBuild(t testing.TB, cfg Config, env Env) *pipeline.Pipeline {
	t.Helper()
	p, err := Build(cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
