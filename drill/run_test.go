package drill

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// Test runs are compressed: speed testSpeed() at a scenario rate of
// testRate() questions per second. The race detector makes every question
// several times dearer, so under it the runs are slower and lighter.
func testSpeed() float64 {
	if raceEnabled {
		return 4
	}
	return 8
}

func testRate() float64 {
	if raceEnabled {
		return 10
	}
	return 20
}

// wasteBar is the waste goal at the test's rate: the calls that trip a
// breaker are a fixed number, so their share of all tokens grows as the
// rate falls below the 20 questions per second the goal is checked at.
func wasteBar() float64 { return goalWaste * 20 / testRate() }

// runScenario plays a shipped scenario, compressed, from the repository
// root as a user would, and returns the report. With DRILL_OUT set, the
// report is also written there.
func runScenario(t *testing.T, name string, settings ...string) *Report {
	t.Helper()
	return runScenarioFor(t, name, 0, settings...)
}

// runScenarioFor is runScenario measuring only the first d of the
// scenario, all of it if d is 0.
func runScenarioFor(t *testing.T, name string, d time.Duration, settings ...string) *Report {
	t.Helper()
	out := os.Getenv("DRILL_OUT")
	if out != "" {
		var err error
		if out, err = filepath.Abs(out); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(repoRoot)
	sc, err := LoadScenario(filepath.Join("testdata/scenarios", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sc.Load.Rate = testRate()
	if d > 0 {
		sc.Load.Duration = d
	}
	r, err := Run(context.Background(), Options{Scenario: sc, Speed: testSpeed(), Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Settings) != len(settings) {
		t.Fatalf("%d settings reported, want %d", len(r.Settings), len(settings))
	}
	for _, s := range r.Settings {
		want := int(testRate() * sc.Load.Duration.Seconds())
		if s.Questions < want-want/50-2 || s.Questions > want+want/50+2 {
			t.Errorf("%s: %d questions measured, want about %d", s.Setting, s.Questions, want)
		}
		t.Logf("%s: by source %v, availability %.4f, failing calls %d, waste %.4f, periods %+v, peaks %d goroutines %d bytes, warnings %q",
			s.Setting, s.BySource, s.Availability, s.FailingCalls, s.Waste, s.OpenPeriods, s.PeakGoroutines, s.PeakHeap, s.Warnings)
	}
	if out != "" {
		writeAll(t, filepath.Join(out, name), r)
	}
	return r
}

func writeAll(t *testing.T, dir string, r *Report) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]func(*os.File) error{
		"report.md":   func(f *os.File) error { return WriteMarkdown(f, r) },
		"report.json": func(f *os.File) error { return WriteJSON(f, r) },
		"report.png":  func(f *os.File) error { return WritePNG(f, r) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := w(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func goal(t *testing.T, s *SettingReport, name string) Goal {
	t.Helper()
	for _, g := range s.Goals {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("%s: no goal %q", s.Setting, name)
	return Goal{}
}

func opened(s *SettingReport, key string) int {
	n := 0
	for _, tr := range s.Transitions {
		if tr.Key == key && tr.To == "open" {
			n++
		}
	}
	return n
}

// TestPrimaryOutageGoals checks the goals of the primary-outage drill on
// full, beside none, from counts of calls, sources and tokens.
func TestPrimaryOutageGoals(t *testing.T) {
	r := runScenario(t, "primary-outage", SettingNone, SettingFull)
	none, full := r.Settings[0], r.Settings[1]
	if full.Availability < goalAvailability {
		t.Errorf("full: availability %.4f < %.3f (%v)", full.Availability, goalAvailability, full.BySource)
	}
	if g := goal(t, full, "calls to a failing model per open period"); !g.Met {
		t.Errorf("full: calls per open period %s, want %s (periods %+v)", g.Got, g.Want, full.OpenPeriods)
	}
	if full.MaxCallsPerOpen != 3 {
		t.Errorf("full: limit per open period = %d, want failure_threshold 2 + half_open_max_calls 1", full.MaxCallsPerOpen)
	}
	if opened(full, "model/primary-llm") == 0 {
		t.Errorf("full: the primary's breaker never opened: %+v", full.Transitions)
	}
	if full.Waste > wasteBar() {
		t.Errorf("full: waste %.4f > %.3f (%d of %d tokens)", full.Waste, wasteBar(), full.FailingTokens, full.Tokens)
	}
	// none sends every question of the outage to the hung model.
	inWindow := 0
	for _, p := range none.Samples {
		if p.At >= 10*time.Second && p.At < 40*time.Second {
			inWindow++
		}
	}
	if none.FailingCalls*10 < int64(inWindow)*8 || opened(none, "model/primary-llm") != 0 {
		t.Errorf("none: %d calls to the hung model for %d questions, %d openings", none.FailingCalls, inWindow, opened(none, "model/primary-llm"))
	}
	if full.FailingCalls*10 > none.FailingCalls {
		t.Errorf("full sent %d calls to the hung model, none %d: want at least 10x fewer", full.FailingCalls, none.FailingCalls)
	}
	// Latency only by comparison: none waits for the primary's timeout.
	if full.FaultLatency.P99 >= none.FaultLatency.P99 {
		t.Errorf("p99 while failing: full %v >= none %v", full.FaultLatency.P99, none.FaultLatency.P99)
	}
}

func TestPrimaryFlapping(t *testing.T) {
	r := runScenario(t, "primary-flapping", SettingFull)
	full := r.Settings[0]
	if full.Availability < goalAvailability {
		t.Errorf("full: availability %.4f (%v)", full.Availability, full.BySource)
	}
	if opened(full, "model/primary-llm") < 2 {
		t.Errorf("full: the primary's breaker opened %d times over four outages", opened(full, "model/primary-llm"))
	}
	if g := goal(t, full, "calls to a failing model per open period"); !g.Met {
		t.Errorf("full: calls per open period %s, want %s (periods %+v)", g.Got, g.Want, full.OpenPeriods)
	}
}

func TestRateLimitStorm(t *testing.T) {
	r := runScenario(t, "rate-limit-storm", SettingFull)
	for _, s := range r.Settings {
		if s.Availability < goalAvailability {
			t.Errorf("%s: availability %.4f (%v)", s.Setting, s.Availability, s.BySource)
		}
		// A 429 cools the model down and is not a breaker failure.
		if n := opened(s, "model/primary-llm"); n != 0 {
			t.Errorf("%s: 429s opened the primary's breaker %d times", s.Setting, n)
		}
		// 30s of storm with Retry-After 5s (at least 1s real, 8s of
		// scenario time at this speed): a handful of calls, not one per
		// question.
		if s.FailingCalls > 10 {
			t.Errorf("%s: %d calls during the storm, want the model left alone while cooling down", s.Setting, s.FailingCalls)
		}
	}
}

func TestBothDown(t *testing.T) {
	r := runScenario(t, "both-down", SettingFull)
	full := r.Settings[0]
	if full.Answered != 1 {
		t.Errorf("full: answered %.4f, want every question answered (%v)", full.Answered, full.BySource)
	}
	if full.BySource[string(tiers.SourceRetrieval)]+full.BySource[string(tiers.SourceStaleCache)] == 0 {
		t.Errorf("full: no answer from retrieval or the stale cache while both models were down (%v)", full.BySource)
	}
	if opened(full, "model/primary-llm") == 0 || opened(full, "model/fallback-llm") == 0 {
		t.Errorf("full: breakers did not open: %+v", full.Transitions)
	}
	if g := goal(t, full, "calls to a failing model per open period"); !g.Met {
		t.Errorf("full: calls per open period %s, want %s (periods %+v)", g.Got, g.Want, full.OpenPeriods)
	}
}

func TestSlowDegradation(t *testing.T) {
	r := runScenario(t, "slow-degradation", SettingBreaker)
	br := r.Settings[0]
	var first time.Duration = -1
	for _, tr := range br.Transitions {
		if tr.Key == "model/primary-llm" && tr.To == "open" {
			first = tr.At
			break
		}
	}
	// Calls turn slow (1.2s > slow_call_duration 1s) at 30s; the breaker
	// needs minimum_calls of them.
	if first < 30*time.Second || first >= 50*time.Second {
		t.Errorf("breaker: the primary's breaker first opened at %v, want between 30s and 50s (%+v)", first, br.Transitions)
	}
	if br.Availability < goalAvailability {
		t.Errorf("breaker: availability %.4f (%v)", br.Availability, br.BySource)
	}
}

func TestStreamBreaks(t *testing.T) {
	r := runScenario(t, "stream-breaks", SettingFull)
	full := r.Settings[0]
	// Streams cost more CPU than plain calls: on a loaded machine a few
	// fallback streams may miss their compressed timeouts, so availability
	// is held to a looser bar here than in the primary-outage goals.
	if full.Answered != 1 || full.Availability < 0.95 {
		t.Errorf("full: answered %.4f, availability %.4f (%v)", full.Answered, full.Availability, full.BySource)
	}
	if g := goal(t, full, "calls to a failing model per open period"); !g.Met {
		t.Errorf("full: calls per open period %s, want %s (periods %+v)", g.Got, g.Want, full.OpenPeriods)
	}
	if opened(full, "model/primary-llm") == 0 {
		t.Errorf("full: the primary's breaker never opened: %+v", full.Transitions)
	}
}

// TestHungPrimaryLoad asks 500 questions at once of a pipeline whose
// primary model hangs, with bulkheads set: every question is answered
// within the request's deadline, none is lost, and goroutines and heap
// stay bounded.
func TestHungPrimaryLoad(t *testing.T) {
	const n = 500
	sc, err := LoadScenario(filepath.Join(scenarioDir, "primary-outage.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRig(sc, SettingFull, 1) // primary timeout 2s, request deadline 8s
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	r.up.play(clockScale{zero: time.Now(), speed: 1}, map[string][]Step{
		"primary-llm":  {{Mode: llmtest.ModeHang}},
		"fallback-llm": {{Mode: llmtest.ModeLatency, Delay: 20 * time.Millisecond}},
	}, 1)
	questions, err := loadQuestions(sc.Questions)
	if err != nil {
		t.Fatal(err)
	}
	deadline := r.cfg.Server.RequestTimeout
	smp := startSampler(5 * time.Millisecond)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results = map[int]string{}
		slowest time.Duration
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			res, err := r.p.Ask(context.Background(), tiers.Query{Tenant: "load", Session: "s",
				Question: questions[i%len(questions)] + " #" + string(rune('a'+i%26)) + string(rune('a'+i/26))})
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			slowest = max(slowest, d)
			if err != nil {
				results[i] = "error: " + err.Error()
				return
			}
			results[i] = string(res.Source)
		})
	}
	close(start)
	wg.Wait()
	peakG, peakHeap := smp.finish()
	t.Logf("%d questions: slowest %v (deadline %v), peak %d goroutines, peak heap %.1f MiB, primary calls %d",
		n, slowest, deadline, peakG, float64(peakHeap)/(1<<20), r.up.stats("primary-llm").Calls)
	if len(results) != n {
		t.Fatalf("%d results, want %d", len(results), n)
	}
	counts := map[string]int{}
	for _, src := range results {
		counts[src]++
	}
	if counts[string(tiers.SourceFallback)]+counts[string(tiers.SourceRetrieval)]+counts[string(tiers.SourceStatic)] != n {
		t.Errorf("sources = %v, want every question answered below the hung primary", counts)
	}
	if slowest > deadline {
		t.Errorf("slowest question took %v, deadline %v", slowest, deadline)
	}
	// Bulkhead max_concurrent 2: at most 2 calls hang at once, and the
	// breaker stops the rest.
	if calls := r.up.stats("primary-llm").Calls; calls > 3 {
		t.Errorf("%d calls reached the hung primary, want <= 3", calls)
	}
	// One goroutine per question asked, plus a bounded number of the
	// pipeline's and the servers' own.
	if peakG > n+200 {
		t.Errorf("peak goroutines %d for %d questions", peakG, n)
	}
	if peakHeap > 256<<20 {
		t.Errorf("peak heap %d bytes", peakHeap)
	}
}
