package pipeline

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/tiers"
)

// chatDoer is an OpenAI-compatible chat endpoint in process: it answers
// every completion, or 503 while down, and counts the probes (one-token
// requests) apart from the questions.
type chatDoer struct {
	mu        sync.Mutex
	down      bool
	probes    int
	questions int
}

func (d *chatDoer) Do(req *http.Request) (*http.Response, error) {
	var body struct {
		MaxTokens int `json:"max_tokens"`
	}
	b, _ := io.ReadAll(req.Body)
	_ = json.Unmarshal(b, &body)
	d.mu.Lock()
	defer d.mu.Unlock()
	if body.MaxTokens == 1 {
		d.probes++
	} else {
		d.questions++
	}
	status, out := http.StatusOK, `{"choices":[{"index":0,"message":{"role":"assistant","content":"primary"},"finish_reason":"stop"}]}`
	if d.down {
		status, out = http.StatusServiceUnavailable, `{"error":{"message":"down","type":"server_error"}}`
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(out)), Request: req}, nil
}

func (d *chatDoer) set(down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = down
}

func (d *chatDoer) counts() (probes, questions int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.probes, d.questions
}

// TestProbeRecovery: the primary comes back while no question arrives for
// 30s. With probing, the prober closes its breaker before the next
// question, which the primary answers; without, that question is the
// half-open probe.
func TestProbeRecovery(t *testing.T) {
	for _, probing := range []bool{true, false} {
		name := map[bool]string{true: "probing", false: "passive"}[probing]
		t.Run(name, func(t *testing.T) { synctest.Test(t, func(t *testing.T) { probeRecovery(t, probing) }) })
	}
}

func probeRecovery(t *testing.T, probing bool) {
	doer := &chatDoer{down: true}
	client := tiers.NewClient(tiers.ClientConfig{BaseURL: "http://model.test/v1", HTTPClient: doer})
	llm := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Candidates: []tiers.Candidate{{ID: "qwen", Model: "qwen", Client: client}}})
	rec := &recorder{}
	opts := Options{Clock: clock.System, Observer: rec, Tiers: []Stage{
		{Tier: llm, Model: true, Breaker: breaker.Config{FailureThreshold: 2, OpenDuration: 10 * time.Second}},
		{Tier: tiers.NewStatic("static", "sorry")}}}
	if probing {
		opts.Probes = []Probe{{Model: "qwen", Interval: 10 * time.Second, Timeout: 5 * time.Second,
			Send: func(ctx context.Context) error { return tiers.ProbeChat(ctx, client, "qwen", "qwen") }}}
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, q := range []string{"a", "b"} {
		if res := ask(t, p, q); res.Source != tiers.SourceStatic {
			t.Fatalf("question %q while the primary is down: %s", q, res.Source)
		}
	}
	b := p.Breakers().Get("model/qwen")
	if b.State() != breaker.StateOpen {
		t.Fatalf("model/qwen = %v after two failures, want open", b.State())
	}

	doer.set(false) // back, while no question arrives
	time.Sleep(30 * time.Second)
	synctest.Wait()
	probes, _ := doer.counts()
	want := map[bool]breaker.State{true: breaker.StateClosed, false: breaker.StateHalfOpen}[probing]
	if got := b.State(); got != want || probes != map[bool]int{true: 1, false: 0}[probing] {
		t.Fatalf("after 30s quiet: model/qwen %v with %d probes, want %v with %d", got, probes, want, map[bool]int{true: 1, false: 0}[probing])
	}

	res := ask(t, p, "c")
	if got := outcomes(res); res.Source != tiers.SourcePrimary || !slices.Equal(got, []string{"primary/qwen:success"}) {
		t.Fatalf("next question: %s %v, want the primary's answer", res.Source, got)
	}
	if got := b.State(); got != breaker.StateClosed {
		t.Fatalf("model/qwen after the question: %v", got)
	}
	events := rec.kinds(EventProbe)
	if !probing {
		if len(events) != 0 {
			t.Fatalf("probe events without probing: %+v", events)
		}
		return
	}
	if len(events) != 1 || events[0].Attempt.Outcome != OutcomeSuccess || events[0].To != breaker.StateClosed {
		t.Fatalf("probe events = %+v, want one success that closed the breaker", events)
	}
	st := p.Status().Probes
	if len(st) != 1 || st[0].Model != "qwen" || st[0].Probes != 1 || st[0].LastOut != OutcomeSuccess ||
		st[0].Interval != 10*time.Second || st[0].LastAt.IsZero() {
		t.Fatalf("probe status = %+v", st)
	}
}

// TestProbedModelSkippedWhileHalfOpen: with probing, a question never
// probes the model: while half-open (before the prober's turn) the model
// is skipped.
func TestProbedModelSkippedWhileHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		doer := &chatDoer{down: true}
		client := tiers.NewClient(tiers.ClientConfig{BaseURL: "http://model.test/v1", HTTPClient: doer})
		llm := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Candidates: []tiers.Candidate{{ID: "qwen", Model: "qwen", Client: client}}})
		// The probe hangs until its timeout: the breaker stays half-open meanwhile.
		release := make(chan struct{})
		p, err := New(Options{Clock: clock.System, Tiers: []Stage{
			{Tier: llm, Model: true, Breaker: breaker.Config{FailureThreshold: 1, OpenDuration: 10 * time.Second}},
			{Tier: tiers.NewStatic("static", "sorry")}},
			Probes: []Probe{{Model: "qwen", Timeout: 5 * time.Second, Send: func(ctx context.Context) error {
				select {
				case <-ctx.Done():
					return &tiers.Error{Kind: tiers.KindTimeout, Err: ctx.Err()}
				case <-release:
					return nil
				}
			}}}})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		defer close(release)
		ask(t, p, "a") // trips model/qwen
		doer.set(false)
		time.Sleep(11 * time.Second) // the open time is over; the probe is under way
		synctest.Wait()
		b := p.Breakers().Get("model/qwen")
		if s := b.Snapshot(); s.State != breaker.StateHalfOpen || s.ProbesInFlight != 1 {
			t.Fatalf("model/qwen %v with %d probes in flight, want half_open with the prober's", s.State, s.ProbesInFlight)
		}
		res := ask(t, p, "b")
		if got := outcomes(res); !slices.Contains(got, "primary/qwen:breaker_open") {
			t.Fatalf("attempts while half-open = %v, want qwen skipped", got)
		}
		if _, q := doer.counts(); q != 1 {
			t.Fatalf("questions reached the model %d times, want 1 (before the trip)", q)
		}
	})
}

// TestProberWakesWithoutItsCallback: a model breaker with a state-change
// callback of its own never pokes the prober; the prober still looks at
// it every interval, so the model recovers by probe, not by a question.
func TestProberWakesWithoutItsCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		doer := &chatDoer{down: true}
		client := tiers.NewClient(tiers.ClientConfig{BaseURL: "http://model.test/v1", HTTPClient: doer})
		llm := tiers.NewLLM(tiers.LLMConfig{Name: "primary", Candidates: []tiers.Candidate{{ID: "qwen", Model: "qwen", Client: client}}})
		var mu sync.Mutex
		var seen []breaker.State
		own := func(name string, _, to breaker.State) {
			mu.Lock()
			defer mu.Unlock()
			if name == "model/qwen" {
				seen = append(seen, to)
			}
		}
		p, err := New(Options{Clock: clock.System, Tiers: []Stage{
			{Tier: llm, Model: true, Breaker: breaker.Config{FailureThreshold: 2, OpenDuration: 10 * time.Second, OnStateChange: own}},
			{Tier: tiers.NewStatic("static", "sorry")}},
			Probes: []Probe{{Model: "qwen", Interval: 10 * time.Second,
				Send: func(ctx context.Context) error { return tiers.ProbeChat(ctx, client, "qwen", "qwen") }}}})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ask(t, p, "a")
		ask(t, p, "b") // trips model/qwen
		doer.set(false)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		probes, questions := doer.counts()
		if got := p.Breakers().Get("model/qwen").State(); got != breaker.StateClosed || probes != 1 || questions != 2 {
			t.Fatalf("after 30s quiet: model/qwen %v, %d probes, %d questions; want closed, 1, 2", got, probes, questions)
		}
		mu.Lock()
		defer mu.Unlock()
		if want := []breaker.State{breaker.StateOpen, breaker.StateHalfOpen, breaker.StateClosed}; !slices.Equal(seen, want) {
			t.Fatalf("own callback saw %v, want %v", seen, want)
		}
	})
}

// TestProbeTimedOnThePipelineClock: a probe's duration, in its event, is
// read off the pipeline's clock, as a question's breaker time is.
func TestProbeTimedOnThePipelineClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		var clk *clock.Manual
		p, clk := newTestPipeline(t, Options{Observer: rec,
			Tiers: []Stage{{Tier: tier("static", tiers.SourceStatic, answers("sorry"))}},
			Probes: []Probe{{Model: "qwen", Interval: time.Second, Send: func(context.Context) error {
				clk.Advance(3 * time.Second) // the probe takes 3s on the pipeline's clock
				return nil
			}}}})
		b := p.Breakers().Get("model/qwen")
		b.Trip()
		clk.Advance(time.Hour) // past the open time
		time.Sleep(2 * time.Second)
		synctest.Wait()
		ev := rec.kinds(EventProbe)
		if len(ev) != 1 || ev[0].Attempt.Outcome != OutcomeSuccess || ev[0].Attempt.Duration != 3*time.Second {
			t.Fatalf("probe events = %+v, want one success taking 3s", ev)
		}
		if got := b.State(); got != breaker.StateClosed {
			t.Fatalf("model/qwen %v after the probe, want closed", got)
		}
	})
}
