package drill

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// DefaultQuestions is the question set used when a scenario names none,
// relative to the working directory.
const DefaultQuestions = "testdata/kb-eval.jsonl"

// Limits on a scenario's load, so a typo cannot exhaust the machine.
const (
	maxRate        = 20000
	maxConcurrency = 10000
)

// ErrScenario reports a scenario that cannot be run; the message names the
// field's path.
var ErrScenario = errors.New("drill: bad scenario")

// Scenario is a scripted outage: a pipeline configuration, a fault
// timeline per model, a load and a question set. A Scenario is a plain
// value; Run does not modify it.
type Scenario struct {
	// Name is the scenario's name; default the file name without ".yaml".
	Name string `yaml:"name"`
	// Description says what the scenario shows.
	Description string `yaml:"description"`
	// Config is the pipeline configuration. Every model named under
	// Config.Models is served by the drill's upstream.
	Config config.Config `yaml:"-"`
	// Faults maps a Config.Models key to its fault timeline, sorted by At.
	// A model without a timeline answers normally throughout.
	Faults map[string][]Step `yaml:"faults"`
	// Load is the traffic.
	Load Load `yaml:"load"`
	// Questions is the path of a JSON Lines file of {"question": …}
	// objects; default DefaultQuestions.
	Questions string `yaml:"questions"`
	// Tenants are assigned to the questions in turn; default one tenant,
	// "drill".
	Tenants []string `yaml:"tenants"`
	// Stream asks the questions through the pipeline's streaming path when
	// the pipeline offers one.
	Stream bool `yaml:"stream"`
}

// Step is one step of a model's fault timeline: from At (after the end of
// the warm-up) the fault holds until the next step. It carries every
// field of llmtest.Fault. A Step is a plain value.
type Step struct {
	At         time.Duration `yaml:"at"`
	Mode       llmtest.Mode  `yaml:"mode"`
	Delay      time.Duration `yaml:"delay"`
	Status     int           `yaml:"status"`
	Body       string        `yaml:"body"`
	RetryAfter time.Duration `yaml:"retry_after"`
	After      int           `yaml:"after"`
	// Failing says whether the model counts as failing during the step
	// (its calls and tokens count as waste, its time as fault window).
	// Default: every mode but ok and latency fails.
	Failing *bool `yaml:"failing"`
}

// Fault returns the llmtest fault of s.
func (s Step) Fault() llmtest.Fault {
	return llmtest.Fault{Mode: s.Mode, Delay: s.Delay, Status: s.Status, Body: s.Body,
		RetryAfter: s.RetryAfter, After: s.After}
}

// IsFailing reports whether the model counts as failing during s.
func (s Step) IsFailing() bool {
	if s.Failing != nil {
		return *s.Failing
	}
	return s.Mode != "" && s.Mode != llmtest.ModeOK && s.Mode != llmtest.ModeLatency
}

// Load is a scenario's traffic: Rate questions per second (open loop) or
// Concurrency clients asking back to back (closed loop), for Duration
// after a Warmup that is not measured. A Load is a plain value.
type Load struct {
	Rate        float64       `yaml:"rate"`
	Concurrency int           `yaml:"concurrency"`
	Duration    time.Duration `yaml:"duration"`
	Warmup      time.Duration `yaml:"warmup"`
}

// scenarioFile is the YAML form of a Scenario.
type scenarioFile struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Config      yaml.Node         `yaml:"config"`
	ConfigFile  string            `yaml:"config_file"`
	Faults      map[string][]Step `yaml:"faults"`
	Load        Load              `yaml:"load"`
	Questions   string            `yaml:"questions"`
	Tenants     []string          `yaml:"tenants"`
	Stream      bool              `yaml:"stream"`
}

// LoadScenario reads and checks the scenario file at path. Relative paths
// written in it (config_file, questions, the inline config's
// knowledge_base.path) are relative to the file's directory; the paths
// in a config_file are read as ragfuse serve --config reads them (see
// ParseScenario).
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("drill: %w", err)
	}
	sc, err := ParseScenario(data, filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return sc, nil
}

// ParseScenario reads and checks a scenario; relative paths written in it
// (config_file, questions, the inline config's knowledge_base.path) are
// resolved against dir. A config_file is read as ragfuse serve --config
// reads it: its knowledge_base.path is left relative to the working
// directory, so that one configuration file means the same to both.
// Unknown fields and bad values fail with the field's path in the
// message, e.g. "faults.p1[1].at: …".
func ParseScenario(data []byte, dir string) (*Scenario, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrScenario, err)
	}
	if doc.Kind == 0 {
		return nil, fmt.Errorf("%w: empty", ErrScenario)
	}
	var f scenarioFile
	if err := config.DecodeYAML(&doc, &f, ""); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrScenario, err)
	}
	sc := &Scenario{Name: f.Name, Description: f.Description, Faults: f.Faults, Load: f.Load,
		Questions: f.Questions, Tenants: f.Tenants, Stream: f.Stream}
	var err error
	switch {
	case f.ConfigFile != "" && f.Config.Kind != 0:
		err = errors.New("config, config_file: set one, not both")
	case f.ConfigFile != "":
		sc.Config, err = loadConfigFile(resolve(dir, f.ConfigFile))
	case f.Config.Kind != 0:
		sc.Config, err = parseConfigNode(&f.Config)
		if err == nil {
			sc.Config.KnowledgeBase.Path = resolve(dir, sc.Config.KnowledgeBase.Path)
		}
	default:
		err = errors.New("config: required (or config_file)")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrScenario, err)
	}
	check := cloneConfig(sc.Config)
	check.Defaults()
	if err := check.Validate(); err != nil {
		return nil, fmt.Errorf("%w: config: %v", ErrScenario, err)
	}
	if sc.Questions != "" {
		sc.Questions = resolve(dir, sc.Questions)
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// resolve returns p joined to dir unless p is empty or absolute.
func resolve(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// Validate checks s: a configuration with models, timelines for known
// models with steps in order and faults llmtest can serve, exactly one of
// rate and concurrency, a positive duration. Errors wrap ErrScenario and
// name the field's path.
func (s *Scenario) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrScenario, fmt.Sprintf(format, a...))
	}
	for _, m := range slices.Sorted(maps.Keys(s.Faults)) {
		steps := s.Faults[m]
		if _, ok := s.Config.Models[m]; !ok {
			return bad("faults.%s: no such model under config.models", m)
		}
		if len(steps) == 0 {
			return bad("faults.%s: empty timeline", m)
		}
		for i, st := range steps {
			if st.At < 0 {
				return bad("faults.%s[%d].at: must be >= 0", m, i)
			}
			if i > 0 && st.At <= steps[i-1].At {
				return bad("faults.%s[%d].at: must be after the previous step's", m, i)
			}
			if err := st.Fault().Validate(); err != nil {
				return bad("faults.%s[%d]: %v", m, i, err)
			}
		}
	}
	l := s.Load
	switch {
	case l.Rate < 0 || l.Rate > maxRate:
		return bad("load.rate: must be in [0, %d]", maxRate)
	case l.Concurrency < 0 || l.Concurrency > maxConcurrency:
		return bad("load.concurrency: must be in [0, %d]", maxConcurrency)
	case (l.Rate > 0) == (l.Concurrency > 0):
		return bad("load: set one of rate and concurrency")
	case l.Duration <= 0:
		return bad("load.duration: must be > 0")
	case l.Warmup < 0:
		return bad("load.warmup: must be >= 0")
	}
	for i, t := range s.Tenants {
		if strings.TrimSpace(t) == "" {
			return bad("tenants[%d]: empty", i)
		}
	}
	return nil
}

// Window is an interval of scenario time, [Start, End), during which Model
// was failing. A Window is a plain value.
type Window struct {
	Model string        `json:"model"`
	Mode  llmtest.Mode  `json:"mode"`
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
}

// FailingWindows returns the intervals of [0, Load.Duration) during which
// a model was failing, by model and then by time.
func (s *Scenario) FailingWindows() []Window {
	var out []Window
	for _, m := range slices.Sorted(maps.Keys(s.Faults)) {
		steps := s.Faults[m]
		for i, st := range steps {
			end := s.Load.Duration
			if i+1 < len(steps) {
				end = min(end, steps[i+1].At)
			}
			if !st.IsFailing() || st.At >= end {
				continue
			}
			if n := len(out); n > 0 && out[n-1].Model == m && out[n-1].End == st.At && out[n-1].Mode == st.Mode {
				out[n-1].End = end
				continue
			}
			out = append(out, Window{Model: m, Mode: st.Mode, Start: st.At, End: end})
		}
	}
	return out
}

// loadQuestions reads a JSON Lines file of {"question": …} objects.
func loadQuestions(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("drill: questions: %w", err)
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		b := strings.TrimSpace(sc.Text())
		if b == "" {
			continue
		}
		var q struct {
			Question string `json:"question"`
		}
		if err := json.Unmarshal([]byte(b), &q); err != nil {
			return nil, fmt.Errorf("drill: questions: %s line %d: %v", filepath.Base(path), line, err)
		}
		if strings.TrimSpace(q.Question) == "" {
			return nil, fmt.Errorf("drill: questions: %s line %d: no question", filepath.Base(path), line)
		}
		qs = append(qs, q.Question)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("drill: questions: %w", err)
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("drill: questions: %s holds no question", filepath.Base(path))
	}
	return qs, nil
}
