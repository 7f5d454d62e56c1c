package drill

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

const scenarioDir = "../testdata/scenarios"

// repoRoot is the repository's root, the working directory the shipped
// scenarios are run from (their config_file's knowledge base path is
// relative to it, as for ragfuse serve).
const repoRoot = ".."

// TestShippedScenariosParse guards the scenario files shipped with ragfuse,
// run from the repository root: every file in testdata/scenarios/ is a
// scenario (the configuration they share lives in testdata/configs/).
func TestShippedScenariosParse(t *testing.T) {
	t.Chdir(repoRoot)
	files, err := filepath.Glob("testdata/scenarios/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"both-down", "primary-flapping", "primary-outage", "rate-limit-storm", "slow-degradation", "stream-breaks"}
	got := map[string]bool{}
	for _, f := range files {
		sc, err := LoadScenario(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		got[sc.Name] = true
		if len(sc.FailingWindows()) == 0 {
			t.Errorf("%s: no failing window", sc.Name)
		}
		if _, err := loadQuestions(sc.Questions); err != nil {
			t.Errorf("%s: %v", sc.Name, err)
		}
		if _, err := os.Stat(sc.Config.KnowledgeBase.Path); err != nil {
			t.Errorf("%s: knowledge base: %v", sc.Name, err)
		}
	}
	for _, n := range want {
		if !got[n] {
			t.Errorf("scenario %s missing or broken", n)
		}
	}
}

const minimalConfig = `
config:
  models:
    p1: {base_url: "http://127.0.0.1:9/v1"}
    f1: {base_url: "http://127.0.0.1:9/v1"}
  knowledge_base: {path: kb}
  tiers:
    - {name: primary, kind: llm, models: [p1]}
    - {name: static, kind: static, message: "sorry"}
`

func TestParseScenario(t *testing.T) {
	sc, err := ParseScenario([]byte(minimalConfig+`
faults:
  p1: [{at: 0s, mode: ok}, {at: 10s, mode: hang}, {at: 40s, mode: ok}]
  f1: [{at: 5s, mode: rate_limit, retry_after: 3s}, {at: 20s, mode: latency, delay: 50ms, failing: true}, {at: 30s, mode: ok}]
load: {rate: 50, duration: 60s, warmup: 5s}
tenants: [a, b]
stream: true
`), "base")
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Faults["p1"][1]; got.At != 10*time.Second || got.Mode != llmtest.ModeHang {
		t.Errorf("p1[1] = %+v", got)
	}
	if f := sc.Faults["f1"][0].Fault(); f.RetryAfter != 3*time.Second || f.Mode != llmtest.ModeRateLimit {
		t.Errorf("f1[0] fault = %+v", f)
	}
	if sc.Load.Rate != 50 || sc.Load.Duration != time.Minute || sc.Load.Warmup != 5*time.Second || !sc.Stream {
		t.Errorf("load = %+v, stream %v", sc.Load, sc.Stream)
	}
	if sc.Config.KnowledgeBase.Path != filepath.Join("base", "kb") {
		t.Errorf("kb path = %q, want it relative to the scenario", sc.Config.KnowledgeBase.Path)
	}
	want := []Window{
		{Model: "f1", Mode: llmtest.ModeRateLimit, Start: 5 * time.Second, End: 20 * time.Second},
		{Model: "f1", Mode: llmtest.ModeLatency, Start: 20 * time.Second, End: 30 * time.Second},
		{Model: "p1", Mode: llmtest.ModeHang, Start: 10 * time.Second, End: 40 * time.Second},
	}
	got := sc.FailingWindows()
	if len(got) != len(want) {
		t.Fatalf("windows = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("window %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestParseScenarioConfigFile: a scenario's config_file is found beside
// the scenario, and read as ragfuse serve --config reads it: its
// knowledge_base.path stays relative to the working directory, not to the
// config file's directory.
func TestParseScenarioConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfg := "models: {p1: {base_url: \"http://127.0.0.1:9/v1\"}}\nknowledge_base: {path: kb}\n" +
		"tiers: [{name: primary, kind: llm, models: [p1]}, {name: static, kind: static}]\n"
	if err := os.WriteFile(filepath.Join(dir, "pipe.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte("config_file: pipe.yaml\nload: {concurrency: 4, duration: 1s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "s" || len(sc.Config.Tiers) != 2 || sc.Load.Concurrency != 4 {
		t.Errorf("scenario = %+v", sc)
	}
	if sc.Config.KnowledgeBase.Path != "kb" {
		t.Errorf("kb path = %q, want %q: relative to the working directory, as for serve", sc.Config.KnowledgeBase.Path, "kb")
	}
}

func TestParseScenarioErrors(t *testing.T) {
	load := "\nload: {rate: 5, duration: 10s}\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top field", minimalConfig + load + "speed: 3\n", "speed: unknown field"},
		{"unknown config field", minimalConfig + "  colour: red\n" + load, "config.colour: unknown field"},
		{"unknown step field", minimalConfig + load + "faults: {p1: [{at: 1s, mode: hang, colour: red}]}\n", "faults.p1[0].colour: unknown field"},
		{"bad duration", minimalConfig + load + "faults: {p1: [{at: soon, mode: hang}]}\n", "faults.p1[0].at: want a duration"},
		{"bad tier timeout", strings.Replace(minimalConfig, "models: [p1]}", "models: [p1], timeout: fast}", 1) + load, "config.tiers[0].timeout: want a duration"},
		{"invalid config", strings.Replace(minimalConfig, "kind: llm", "kind: oracle", 1) + load, "config: tiers[0].kind: unknown kind"},
		{"unknown mode", minimalConfig + load + "faults: {p1: [{at: 1s, mode: explode}]}\n", "faults.p1[0]: llmtest: bad fault: unknown mode"},
		{"steps out of order", minimalConfig + load + "faults: {p1: [{at: 5s, mode: hang}, {at: 1s, mode: ok}]}\n", "faults.p1[1].at: must be after"},
		{"negative at", minimalConfig + load + "faults: {p1: [{at: -1s, mode: hang}]}\n", "faults.p1[0].at: must be >= 0"},
		{"unknown model", minimalConfig + load + "faults: {nope: [{at: 1s, mode: hang}]}\n", "faults.nope: no such model"},
		{"empty timeline", minimalConfig + load + "faults: {p1: []}\n", "faults.p1: empty timeline"},
		{"rate and concurrency", minimalConfig + "load: {rate: 5, concurrency: 2, duration: 1s}\n", "load: set one of rate and concurrency"},
		{"no load", minimalConfig, "load: set one of rate and concurrency"},
		{"no duration", minimalConfig + "load: {rate: 5}\n", "load.duration: must be > 0"},
		{"huge rate", minimalConfig + "load: {rate: 1e9, duration: 1s}\n", "load.rate: must be in"},
		{"no config", "load: {rate: 5, duration: 1s}\n", "config: required"},
		{"both configs", minimalConfig + "config_file: x.yaml\n" + load, "set one, not both"},
		{"missing config file", "config_file: nowhere.yaml\n" + load, "config_file:"},
		{"bad config file", "config_file: bad.yaml\n" + load, "config_file bad.yaml: servr: unknown field"},
		{"empty tenant", minimalConfig + load + "tenants: [a, ' ']\n", "tenants[1]: empty"},
		{"tenants not a list", minimalConfig + load + "tenants: a\n", "tenants: want a list"},
		{"duplicate key", minimalConfig + load + "stream: true\nstream: false\n", `mapping key "stream" already defined`},
		{"not a mapping", "- 1\n- 2\n", "(document): want a mapping"},
		{"empty", "", "empty"},
		{"not yaml", "config: [\n", "drill: bad scenario"},
		{"alias", minimalConfig + load + "x: &a 1\ntenants: [*a]\n", "x: unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("servr: {}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ParseScenario([]byte(tt.yaml), dir)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !errors.Is(err, ErrScenario) {
				t.Errorf("error %v does not wrap ErrScenario", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadQuestionsErrors(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"empty.jsonl":   "\n\n",
		"bad.jsonl":     "{\"question\": \"ok\"}\nnot json\n",
		"blank.jsonl":   "{\"question\": \"  \"}\n",
		"missing.jsonl": "",
	} {
		p := filepath.Join(dir, name)
		if name != "missing.jsonl" {
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := loadQuestions(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
