package drill

import (
	"context"
	"testing"

	"github.com/ragfuse/ragfuse/tiers"
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
