package config

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// Timings of the embedding rig: the cache tier's timeout bounds an
// embedding call, and the embedding model's breaker has the default
// settings (two consecutive failures, open 30s).
const (
	embedCacheTimeout   = 300 * time.Millisecond
	embedRequestTimeout = 3 * time.Second
	embedOpenFor        = 30 * time.Second
	embedRetryAfter     = 10 * time.Second
)

// embedRigConfig is the rig's configuration; %s is the llmtest URL. The
// cache tier's own breaker never trips, so that the "model/embed" breaker
// alone decides whether the embedding service is called.
const embedRigConfig = `
server: {request_timeout: 3s}
models:
  p1:    {base_url: "%[1]s", model: p1}
  embed: {base_url: "%[1]s", model: embed}
tiers:
  - {name: cache, kind: semantic_cache, embedder: embed, timeout: 300ms,
     breaker: {failure_threshold: -1, failure_rate: -1}}
  - {name: primary, kind: llm, models: [p1], timeout: 1s, context_docs: 2}
  - {name: retrieval, kind: retrieval, top_k: 2}
  - {name: static, kind: static, message: "Please contact customer service."}
`

var embedKB = []retrieval.Doc{
	{ID: "returns", Title: "Returns policy", Text: "Items can be returned within 30 days of delivery for a full refund."},
	{ID: "shipping", Title: "Shipping times", Text: "Orders ship within 2 business days; express delivery takes one day."},
	{ID: "warranty", Title: "Warranty", Text: "Electronics carry a one year warranty against manufacturing defects."},
}

// embedFaultCase is one fault of the embedding service and what the cache
// tier's attempt must show for it.
type embedFaultCase struct {
	name  string
	fault llmtest.Fault
	kind  tiers.Kind
	cools bool // 429: the model cools down for Retry-After instead of failing its breaker
}

var embedFaultCases = []embedFaultCase{
	{"latency past timeout", llmtest.Fault{Mode: llmtest.ModeLatency, Delay: 2 * time.Second}, tiers.KindTimeout, false},
	{"hang", llmtest.Fault{Mode: llmtest.ModeHang}, tiers.KindTimeout, false},
	{"status 500", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500}, tiers.KindServer, false},
	{"status 503", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503, Body: "upstream unavailable"}, tiers.KindServer, false},
	{"status 401", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 401}, tiers.KindAuth, false},
	{"rate limit", llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: embedRetryAfter}, tiers.KindRateLimited, true},
	{"reset", llmtest.Fault{Mode: llmtest.ModeReset}, tiers.KindConnection, false},
	{"malformed", llmtest.Fault{Mode: llmtest.ModeMalformed}, tiers.KindMalformed, false},
	{"empty", llmtest.Fault{Mode: llmtest.ModeEmpty}, tiers.KindEmpty, false},
}

// embedRig is a pipeline built from YAML (semantic cache with a remote
// embedder -> primary -> hybrid retrieval -> static) over one llmtest
// server.
type embedRig struct {
	srv *llmtest.Server
	p   *pipeline.Pipeline
	clk *clock.Manual
	n   int // questions asked, to keep each one distinct
}

func newEmbedRig(t *testing.T) *embedRig {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	cfg := mustParse(t, fmt.Sprintf(embedRigConfig, srv.URL))
	kb, err := retrieval.New(embedKB)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(epoch)
	p := mustBuild(t, cfg, Env{Clock: clk, HTTPClient: hc, KnowledgeBase: kb, Getenv: noEnv})
	return &embedRig{srv: srv, p: p, clk: clk}
}

// ask asks a new question about returns, checks it was answered inside
// the request's deadline by want, and returns the result and the
// embedding calls it made.
func (r *embedRig) ask(t *testing.T, want tiers.Source) (*pipeline.Result, int64) {
	t.Helper()
	r.n++
	before := r.embeds()
	start := time.Now()
	res := ask(t, r.p, fmt.Sprintf("How do I return an item I bought (order %d)?", r.n))
	if took := time.Since(start); took > embedRequestTimeout {
		t.Fatalf("question %d answered in %v, past the %v deadline", r.n, took, embedRequestTimeout)
	}
	if res.Source != want {
		t.Fatalf("question %d answered by %s, want %s (%v)", r.n, res.Source, want, outcomes(res))
	}
	return res, r.embeds() - before
}

func (r *embedRig) embeds() int64 { return r.srv.Stats("embed").EmbeddingCalls }

func (r *embedRig) state(name string) breaker.State {
	b, ok := r.p.Breakers().Lookup(name)
	if !ok {
		return 255
	}
	return b.State()
}

// expectCache fails unless the cache tier's attempt in res has outcome
// kind (whichever model it names).
func expectCache(t *testing.T, res *pipeline.Result, kind tiers.Kind) {
	t.Helper()
	for _, a := range res.Attempts {
		if a.Tier == "cache" {
			if a.Outcome != string(kind) {
				t.Fatalf("cache attempt %s (%s), want %s; attempts %v", a.Outcome, a.Error, kind, outcomes(res))
			}
			return
		}
	}
	t.Fatalf("no cache attempt in %v", outcomes(res))
}

// expectAttempts fails unless res's attempts include each of want.
func expectAttempts(t *testing.T, res *pipeline.Result, want ...string) {
	t.Helper()
	for _, w := range want {
		if !contains(outcomes(res), w) {
			t.Fatalf("attempts %v lack %s", outcomes(res), w)
		}
	}
}

// TestEmbedMatrix injects each fault into the embedding service behind the
// semantic cache and the hybrid retriever. The primary answers past the
// failed cache; with the primary down too, the retrieval tier answers
// lexically; the question is embedded at most once; and the "model/embed"
// breaker stops the calls after two failures until its open duration
// passes, then lets exactly one probe through (a 429 cools the model down
// for its Retry-After instead).
func TestEmbedMatrix(t *testing.T) {
	for _, fc := range embedFaultCases {
		t.Run(fc.name, func(t *testing.T) {
			r := newEmbedRig(t)
			r.srv.SetFault("embed", fc.fault)

			res, calls := r.ask(t, tiers.SourcePrimary)
			expectCache(t, res, fc.kind)
			expectAttempts(t, res, "primary/p1:success")
			if calls != 1 {
				t.Fatalf("%d embedding calls for the first question, want 1", calls)
			}

			// The primary fails too: the retrieval tier answers by BM25.
			r.srv.SetFault("p1", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
			res, calls = r.ask(t, tiers.SourceRetrieval)
			expectAttempts(t, res, "primary/p1:server_error", "retrieval:success")
			if len(res.Docs) == 0 || res.Docs[0].ID != "returns" {
				t.Fatalf("retrieval answered with %+v, want the returns policy first", res.Docs)
			}
			if calls > 1 {
				t.Fatalf("%d embedding calls for one question, want at most 1", calls)
			}

			if fc.cools {
				if calls != 0 {
					t.Fatalf("%d embedding calls while the model cools down, want 0", calls)
				}
				expectCache(t, res, tiers.KindUnavailable)
				if s := r.state("model/embed"); s != breaker.StateClosed {
					t.Fatalf("a 429 hurt the model/embed breaker: %v", s)
				}
				r.clk.Advance(embedRetryAfter - time.Second)
				if _, calls = r.ask(t, tiers.SourceRetrieval); calls != 0 {
					t.Fatalf("%d embedding calls before Retry-After passed", calls)
				}
				r.clk.Advance(time.Second)
				if res, calls = r.ask(t, tiers.SourceRetrieval); calls != 1 {
					t.Fatalf("%d embedding calls after Retry-After, want 1", calls)
				}
				expectCache(t, res, fc.kind)
				return
			}

			expectCache(t, res, fc.kind)
			if calls != 1 {
				t.Fatalf("%d embedding calls for the second question, want 1", calls)
			}
			if s := r.state("model/embed"); s != breaker.StateOpen {
				t.Fatalf("model/embed is %v after 2 failures, want open", s)
			}
			for range 3 {
				res, calls = r.ask(t, tiers.SourceRetrieval)
				expectCache(t, res, tiers.KindUnavailable)
				if calls != 0 {
					t.Fatalf("%d embedding calls while model/embed is open", calls)
				}
			}
			r.clk.Advance(embedOpenFor - time.Second)
			if _, calls = r.ask(t, tiers.SourceRetrieval); calls != 0 {
				t.Fatalf("%d embedding calls before the open duration passed", calls)
			}
			r.clk.Advance(time.Second)
			res, calls = r.ask(t, tiers.SourceRetrieval)
			expectCache(t, res, fc.kind)
			if calls != 1 || r.state("model/embed") != breaker.StateOpen {
				t.Fatalf("probe: %d embedding calls, model/embed %v; want 1 call and open again",
					calls, r.state("model/embed"))
			}
			if _, calls = r.ask(t, tiers.SourceRetrieval); calls != 0 {
				t.Fatalf("%d embedding calls after the failed probe re-opened the breaker", calls)
			}

			// Healed: the next probe closes the breaker and the cache learns
			// the primary's answer again.
			r.srv.ClearFaults()
			r.clk.Advance(embedOpenFor)
			res, _ = r.ask(t, tiers.SourcePrimary)
			expectCache(t, res, tiers.KindMiss)
			if s := r.state("model/embed"); s != breaker.StateClosed {
				t.Fatalf("model/embed is %v after a good probe, want closed", s)
			}
			if !strings.Contains(res.Text, "Returns policy") {
				t.Fatalf("healed answer %q does not use the returns policy", res.Text)
			}
		})
	}
}
