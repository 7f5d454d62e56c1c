package pipeline

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// kbRetriever serves a fixed list of documents.
type kbRetriever []retrieval.Doc

func (k kbRetriever) Retrieve(_ context.Context, _ string, n int) ([]retrieval.Doc, error) {
	return k[:min(n, len(k))], nil
}

var testKB = kbRetriever{
	{ID: "returns", Title: "Returns policy", Text: "Items can be returned within 30 days of delivery.", Score: 3},
	{ID: "shipping", Title: "Shipping", Text: "Orders ship within 2 business days.", Score: 2},
}

// Models and timings of the upstream rig.
const (
	bigModel     = "big"
	smallModel   = "small"
	modelTimeout = 200 * time.Millisecond
	rigTimeout   = 2 * time.Second
	openFor      = 30 * time.Second
)

// rig is a pipeline (primary -> fallback -> retrieval -> static) whose
// model tiers call an llmtest server.
type rig struct {
	srv *llmtest.Server
	p   *Pipeline
	clk *clock.Manual
	rec *recorder
}

func newRig(t *testing.T, opts Options) *rig {
	t.Helper()
	return newRigWith(t, opts, testKB)
}

// newRigWith is newRig with the retriever of every tier kb.
func newRigWith(t *testing.T, opts Options, kb retrieval.Retriever) *rig {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	client := tiers.NewClient(tiers.ClientConfig{BaseURL: srv.URL, APIKey: "test-key", HTTPClient: hc})
	br := breaker.Config{FailureThreshold: 2, OpenDuration: openFor, HalfOpenMaxCalls: 1}
	primary := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Source: tiers.SourcePrimary, Retriever: kb, ContextDocs: 2,
		Candidates: []tiers.Candidate{{ID: bigModel, Client: client, MaxTokens: 64}}})
	fallback := tiers.NewLLM(tiers.LLMConfig{Name: "fallback", Source: tiers.SourceFallback, Retriever: kb, ContextDocs: 1,
		Candidates: []tiers.Candidate{{ID: smallModel, Client: client, MaxTokens: 64}}})
	rec := &recorder{}
	opts.Tiers = []Stage{
		{Tier: primary, Model: true, Timeout: modelTimeout, Breaker: br},
		{Tier: fallback, Model: true, Timeout: modelTimeout, Breaker: br},
		{Tier: tiers.NewRetrieval(tiers.RetrievalConfig{Retriever: kb, TopK: 2}), Timeout: 100 * time.Millisecond, Breaker: br},
		{Tier: tiers.NewStatic("static", "")},
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = rigTimeout
	}
	opts.Observer = rec
	p, clk := newTestPipeline(t, opts)
	return &rig{srv: srv, p: p, clk: clk, rec: rec}
}

// ask asks a question and checks it was answered within the deadline.
func (r *rig) ask(t *testing.T, q string) *Result {
	t.Helper()
	start := time.Now()
	res := ask(t, r.p, q)
	if took := time.Since(start); took > rigTimeout {
		t.Fatalf("answered in %v, past the %v deadline", took, rigTimeout)
	}
	return res
}

func (r *rig) state(name string) breaker.State {
	b, ok := r.p.Breakers().Lookup(name)
	if !ok {
		return 255
	}
	return b.State()
}

// slowKB is testKB answering after delay, or failing when its context
// ends first; it counts the retrievals.
type slowKB struct {
	delay time.Duration
	calls atomic.Int32
}

func (k *slowKB) Retrieve(ctx context.Context, q string, n int) ([]retrieval.Doc, error) {
	k.calls.Add(1)
	t := time.NewTimer(k.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return testKB.Retrieve(ctx, q, n)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestSlowRetrievalSparesTheModelTiers guards a question from a slow
// retriever: a retrieval that outlives the primary tier's time limit goes
// on under its own; the primary stops waiting without a model call and
// without its breakers hearing a failure, and the fallback answers from
// the documents of that one retrieval instead of an empty prompt.
func TestSlowRetrievalSparesTheModelTiers(t *testing.T) {
	kb := &slowKB{delay: modelTimeout * 3 / 2}
	r := newRigWith(t, Options{RetrievalTimeout: time.Second}, kb)
	res := r.ask(t, "How do I return an item?")
	if res.Source != tiers.SourceFallback || !strings.HasPrefix(res.Text, "[small] According to Returns policy") {
		t.Fatalf("answer %q from %s (%v), want the fallback's from the documents", res.Text, res.Source, outcomes(res))
	}
	if a := res.Attempts[0]; a.Tier != "primary" || a.Model != "" || a.Outcome != string(tiers.KindRetrieving) {
		t.Fatalf("primary's attempt %+v, want retrieving with no model", a)
	}
	if n := r.srv.Stats(bigModel).Calls; n != 0 || kb.calls.Load() != 1 {
		t.Fatalf("%d calls to the primary model, %d retrievals; want 0 and 1", n, kb.calls.Load())
	}
	for _, name := range []string{"tier/primary", "model/" + bigModel, "tier/fallback", "model/" + smallModel} {
		b, _ := r.p.Breakers().Lookup(name)
		if s := b.Snapshot(); s.Failures != 0 || s.SlowCalls != 0 {
			t.Errorf("%s heard %d failures, %d slow calls for a slow retriever", name, s.Failures, s.SlowCalls)
		}
	}
}

func TestUpstreamAnswerThroughGoOpenAI(t *testing.T) {
	r := newRig(t, Options{})
	res := r.ask(t, "How do I return an item?")
	if res.Source != tiers.SourcePrimary || res.Model != bigModel || !strings.HasPrefix(res.Text, "[big] According to Returns policy") {
		t.Fatalf("result = %+v", res)
	}
	if res.Usage.PromptTokens == 0 || res.Usage.CompletionTokens == 0 || len(res.Docs) != 2 {
		t.Fatalf("usage/docs = %+v %d", res.Usage, len(res.Docs))
	}
	if a := res.Attempts; len(a) != 1 || a[0].Tier != "primary" || a[0].Model != bigModel || a[0].Usage != res.Usage {
		t.Fatalf("attempts = %+v", a)
	}
	if st := r.srv.Stats(bigModel); st.Calls != 1 || st.CompletionTokens != int64(res.Usage.CompletionTokens) {
		t.Fatalf("upstream stats = %+v", st)
	}
}

func TestRateLimitedModelCoolsDown(t *testing.T) {
	r := newRig(t, Options{})
	r.srv.SetFault(bigModel, llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: 5 * time.Second})
	res := r.ask(t, "q1")
	if res.Source != tiers.SourceFallback || res.Attempts[0].Outcome != string(tiers.KindRateLimited) ||
		!strings.Contains(res.Attempts[0].Error, "retry after 5s") {
		t.Fatalf("first: %+v", res)
	}
	for range 3 {
		res = r.ask(t, "q2")
		if res.Source != tiers.SourceFallback || res.Attempts[0].Outcome != outcomeCoolingDown {
			t.Fatalf("while cooling down: %v", outcomes(res))
		}
	}
	if c := r.srv.Stats(bigModel).Calls; c != 1 {
		t.Fatalf("%d calls reached the cooling model, want 1", c)
	}
	if cs := r.p.Status().Cooldowns; len(cs) != 1 || cs[0].Model != bigModel || !cs[0].Until.Equal(r.clk.Now().Add(5*time.Second)) {
		t.Fatalf("status cooldowns %+v, want %s for 5s", cs, bigModel)
	}
	r.clk.Advance(5 * time.Second)
	if cs := r.p.Status().Cooldowns; len(cs) != 0 {
		t.Fatalf("status cooldowns %+v after the cooldown", cs)
	}
	r.srv.ClearFault(bigModel)
	if res = r.ask(t, "q3"); res.Source != tiers.SourcePrimary || r.srv.Stats(bigModel).Calls != 2 {
		t.Fatalf("after the cooldown: %v", outcomes(res))
	}
	if s := r.state("model/" + bigModel); s != breaker.StateClosed {
		t.Fatalf("429 hurt the breaker: %v", s)
	}
}

// TestEndCooldown: a model's cooldown ended by hand (an operator who knows
// its quota is back) lets the next question call it.
func TestEndCooldown(t *testing.T) {
	r := newRig(t, Options{})
	r.srv.SetFault(bigModel, llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: time.Hour})
	r.ask(t, "q1")
	r.srv.ClearFault(bigModel)
	if !r.p.EndCooldown(bigModel) || r.p.EndCooldown(bigModel) || r.p.EndCooldown("no-such-model") {
		t.Fatal("EndCooldown reports the wrong cooldowns as ended")
	}
	if res := r.ask(t, "q2"); res.Source != tiers.SourcePrimary {
		t.Fatalf("after EndCooldown: %v", outcomes(res))
	}
}

func TestRateLimitedWithoutRetryAfterUsesCooldown(t *testing.T) {
	r := newRig(t, Options{Cooldown: 3 * time.Second})
	r.srv.SetFault(bigModel, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 429})
	r.ask(t, "q")
	r.clk.Advance(2 * time.Second)
	if res := r.ask(t, "q"); res.Attempts[0].Outcome != outcomeCoolingDown {
		t.Fatalf("at 2s: %v", outcomes(res))
	}
	r.clk.Advance(time.Second)
	if res := r.ask(t, "q"); res.Attempts[0].Outcome != string(tiers.KindRateLimited) {
		t.Fatalf("at 3s: %v", outcomes(res))
	}
}

func TestHungPrimaryBudget(t *testing.T) {
	// The primary's own timeout is longer than the whole request: the
	// reserve still leaves the fallback and retrieval their time.
	r := newRig(t, Options{RequestTimeout: time.Second})
	r.p.stages[0].Timeout = time.Minute
	r.srv.SetFault(bigModel, llmtest.Fault{Mode: llmtest.ModeHang})
	r.srv.SetFault(smallModel, llmtest.Fault{Mode: llmtest.ModeHang})
	start := time.Now()
	res := r.ask(t, "q")
	took := time.Since(start)
	if res.Source != tiers.SourceRetrieval || took > time.Second {
		t.Fatalf("source %s after %v: %v", res.Source, took, outcomes(res))
	}
	if d := res.Attempts[1].Duration; d < modelTimeout*3/4 {
		t.Fatalf("fallback ran only %v", d)
	}
	if got := strings.Join(outcomes(res), " "); got != "primary/big:timeout fallback/small:timeout retrieval:success" {
		t.Fatalf("attempts = %s", got)
	}
}
