package drill

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// TestFaultsByModelKeyWithSharedProviderName plays a scenario whose two
// config.models entries name the same provider model (one model bought
// from two vendors): the fault timeline of p1 must hit p1 alone, so the
// healthy fallback f1 answers every question and only p1's calls count as
// failing.
func TestFaultsByModelKeyWithSharedProviderName(t *testing.T) {
	sc, err := ParseScenario([]byte(`
config:
  server: {request_timeout: 2s}
  models:
    p1: {base_url: "http://127.0.0.1:9/v1", model: same-model}
    f1: {base_url: "http://127.0.0.1:9/v1", model: same-model}
  knowledge_base: {path: ../kb}
  tiers:
    - {name: primary, kind: llm, models: [p1], timeout: 300ms}
    - {name: fallback, kind: llm, source: fallback, models: [f1], timeout: 1s}
    - {name: static, kind: static, message: "sorry"}
faults:
  p1: [{at: 0s, mode: status, status: 503}]
load: {rate: 20, duration: 1s}
questions: ../kb-eval.jsonl
`), scenarioDir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), Options{Scenario: sc, Settings: []string{SettingNone}})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Settings[0]
	if s.Questions == 0 || s.BySource[string(tiers.SourceFallback)] != s.Questions {
		t.Errorf("by source %v for %d questions, want every one answered by the healthy fallback", s.BySource, s.Questions)
	}
	if s.FailingCalls > int64(s.Questions)+2 {
		t.Errorf("%d calls counted as failing for %d questions: the fallback's calls were counted as p1's", s.FailingCalls, s.Questions)
	}
}

// TestUpstreamCountsCallsUnderTheFaultTheyMet drives the upstream's clock
// by hand across a timeline's switches: every call is counted as failing
// exactly when it met the failing fault, including a call at the very
// instant of a switch, so the calls to failing models and the calls per
// open period come from one classification and agree. (Counters read by
// timers could fire after the switch and count such a call as healthy.)
func TestUpstreamCountsCallsUnderTheFaultTheyMet(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	zero := now
	setTime := func(at time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = zero.Add(at)
	}
	u, err := newUpstream([]string{"p1"}, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	})
	if err != nil {
		t.Fatal(err)
	}
	defer u.close()
	sc := &Scenario{
		Faults: map[string][]Step{"p1": {
			{At: 0, Mode: llmtest.ModeOK},
			{At: 10 * time.Second, Mode: llmtest.ModeStatus, Status: http.StatusServiceUnavailable},
			{At: 20 * time.Second, Mode: llmtest.ModeOK},
		}},
		Load: Load{Rate: 1, Duration: 30 * time.Second},
	}
	u.play(clockScale{zero: zero, speed: 1}, sc.Faults, 1)
	calls := []struct {
		at   time.Duration
		want int
	}{
		{-time.Second, http.StatusOK}, // warm-up: counted nowhere
		{10*time.Second - 1, http.StatusOK},
		{10 * time.Second, http.StatusServiceUnavailable}, // the instant of the switch
		{15 * time.Second, http.StatusServiceUnavailable},
		{20*time.Second - 1, http.StatusServiceUnavailable},
		{20 * time.Second, http.StatusOK},
	}
	for _, c := range calls {
		setTime(c.at)
		if got := chat(t, u.baseURL("p1")); got != c.want {
			t.Errorf("call at %v: status %d, want %d", c.at, got, c.want)
		}
	}
	tr := &trace{setting: SettingFull, segments: u.segments(), arrivals: u.takeArrivals(), maxPerOpen: 3}
	failing := 0
	for _, a := range tr.arrivals {
		if a.failing != (a.at >= 10*time.Second && a.at < 20*time.Second) {
			t.Errorf("call at %v counted failing=%v", a.at, a.failing)
		}
		if a.failing {
			failing++
		}
	}
	r := summarize(tr, sc.FailingWindows())
	if failing != 3 || r.FailingCalls != 3 {
		t.Errorf("calls to failing models %d, failing arrivals %d; want the 3 calls that met the 503", r.FailingCalls, failing)
	}
	if g := goal(t, r, "calls to a failing model per open period"); g.Got != "3" {
		t.Errorf("calls per open period %s, want 3, as counted for calls to failing models", g.Got)
	}
	var healthy int64
	for _, s := range tr.segments {
		if !s.failing {
			healthy += s.stats.Calls
		}
	}
	if healthy != 2 {
		t.Errorf("%d healthy calls counted, want 2 (the warm-up's left out)", healthy)
	}
}

// chat sends one chat completion to the OpenAI base URL and returns the
// status.
func chat(t *testing.T, base string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/chat/completions",
		strings.NewReader(`{"model": "p1", "messages": [{"role": "user", "content": "hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Close = true // leave no idle connection behind
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
