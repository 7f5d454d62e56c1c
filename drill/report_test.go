package drill

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const sec = time.Second

// fixedTrace returns a small, fully known trace: p1 fails from 10s to 40s,
// 10 questions before, during and after, a breaker that trips and probes.
func fixedTrace(setting string, protected bool) *trace {
	tr := &trace{setting: setting, peakG: 42, peakHeap: 3 << 20, maxPerOpen: 3}
	for i := range 60 {
		at := time.Duration(i) * sec
		s := sample{at: at, latency: 20 * time.Millisecond, source: "primary"}
		if at >= 10*sec && at < 40*sec {
			s.source, s.latency = "fallback", 150*time.Millisecond
			if !protected {
				s.latency = 2150 * time.Millisecond
			}
			if i%10 == 5 {
				s.source = "retrieval"
			}
		}
		tr.samples = append(tr.samples, s)
	}
	tr.samples = append(tr.samples, sample{at: -sec, latency: time.Second, source: "primary"}) // warm-up
	tr.samples = append(tr.samples, sample{at: 50 * sec, latency: 8 * time.Second})            // no answer
	for i := range 30 {
		tr.arrivals = append(tr.arrivals, arrival{at: time.Duration(10+i) * sec, model: "p1", failing: true})
	}
	if protected {
		tr.arrivals = tr.arrivals[:0]
		for _, at := range []time.Duration{10 * sec, 10*sec + 1, 10*sec + 2, 19 * sec, 28 * sec, 37 * sec} {
			tr.arrivals = append(tr.arrivals, arrival{at: at, model: "p1", failing: true})
		}
		tr.transitions = []Transition{
			{At: 12 * sec, Key: "model/p1", From: "closed", To: "open"},
			{At: 20 * sec, Key: "model/p1", From: "open", To: "half_open"},
			{At: 21 * sec, Key: "model/p1", From: "half_open", To: "open"},
			{At: 29 * sec, Key: "model/p1", From: "open", To: "half_open"},
			{At: 30 * sec, Key: "model/p1", From: "half_open", To: "open"},
			{At: 38 * sec, Key: "model/p1", From: "open", To: "half_open"},
			{At: 41 * sec, Key: "model/p1", From: "half_open", To: "closed"},
		}
	}
	for range 200 {
		tr.fallback = append(tr.fallback, 140*time.Millisecond)
	}
	calls := int64(len(tr.arrivals))
	tr.segments = []segment{
		{model: "p1", stats: llmtest.Stats{Calls: 30, PromptTokens: 3000, CompletionTokens: 600}},
		{model: "p1", failing: true, stats: llmtest.Stats{Calls: calls, Faulted: calls}},
		{model: "f1", stats: llmtest.Stats{Calls: 30, PromptTokens: 3000, CompletionTokens: 600}},
	}
	return tr
}

func fixedReport() *Report {
	windows := []Window{{Model: "p1", Mode: llmtest.ModeHang, Start: 10 * sec, End: 40 * sec}}
	return &Report{
		Scenario: "fixed", Description: "A fixed report for the golden test.", Speed: 10,
		Duration: 60 * sec, Warmup: 5 * sec, Faults: windows,
		Settings: []*SettingReport{
			summarize(fixedTrace("none", false), windows),
			summarize(fixedTrace("full", true), windows),
		},
	}
}

func TestSummarize(t *testing.T) {
	r := fixedReport()
	none, full := r.Settings[0], r.Settings[1]
	if none.Questions != 61 || full.Questions != 61 {
		t.Errorf("questions = %d, %d; want 61 (the warm-up question excluded)", none.Questions, full.Questions)
	}
	if got := full.BySource; got["primary"] != 30 || got["fallback"] != 27 || got["retrieval"] != 3 || got[sourceError] != 1 {
		t.Errorf("by source = %v", got)
	}
	if want := 57.0 / 61; full.Availability != want {
		t.Errorf("availability = %v, want %v", full.Availability, want)
	}
	if want := 60.0 / 61; full.Answered != want {
		t.Errorf("answered = %v, want %v", full.Answered, want)
	}
	if full.FaultLatency.N != 30 || full.FaultLatency.P99 != 150*time.Millisecond {
		t.Errorf("fault latency = %+v", full.FaultLatency)
	}
	if none.FaultLatency.P99 != 2150*time.Millisecond || none.Latency.Max != 8*time.Second {
		t.Errorf("none latency = %+v / %+v", none.FaultLatency, none.Latency)
	}
	if full.FallbackP99 != 140*time.Millisecond {
		t.Errorf("fallback p99 = %v", full.FallbackP99)
	}
	// The faulted calls' prompts are estimated at the healthy mean: 100 tokens.
	if full.FailingCalls != 6 || full.FailingTokens != 600 || full.Tokens != 7800 {
		t.Errorf("failing calls, tokens, total = %d, %d, %d", full.FailingCalls, full.FailingTokens, full.Tokens)
	}
	if none.FailingCalls != 30 || none.FailingTokens != 3000 {
		t.Errorf("none: failing calls, tokens = %d, %d", none.FailingCalls, none.FailingTokens)
	}
	wantPeriods := []OpenPeriod{{"model/p1", 12 * sec, 3}, {"model/p1", 21 * sec, 1}, {"model/p1", 30 * sec, 1}}
	if len(full.OpenPeriods) != len(wantPeriods) {
		t.Fatalf("open periods = %+v", full.OpenPeriods)
	}
	for i, p := range wantPeriods {
		if full.OpenPeriods[i] != p {
			t.Errorf("open period %d = %+v, want %+v", i, full.OpenPeriods[i], p)
		}
	}
	met := func(s *SettingReport) []bool {
		var out []bool
		for _, g := range s.Goals {
			out = append(out, g.Met)
		}
		return out
	}
	// Availability is missed by both (retrieval answers); full meets the rest.
	if got, want := met(full), []bool{false, true, false, true}; !equal(got, want) {
		t.Errorf("full goals met = %v, want %v: %+v", got, want, full.Goals)
	}
	if got, want := met(none), []bool{false, false, false, false}; !equal(got, want) {
		t.Errorf("none goals met = %v, want %v: %+v", got, want, none.Goals)
	}
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, fixedReport()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden.md")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("markdown differs from %s (go test -update rewrites it):\n%s", golden, b.String())
	}
}

func TestJSONRoundTrip(t *testing.T) {
	var b bytes.Buffer
	r := fixedReport()
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Settings) != 2 || back.Settings[1].FailingCalls != 6 || len(back.Settings[1].Samples) != 61 {
		t.Fatalf("round trip lost data: %+v", back.Settings)
	}
	for i, p := range back.Settings[1].Samples {
		if p != r.Settings[1].Samples[i] {
			t.Fatalf("sample %d = %+v, want %+v", i, p, r.Settings[1].Samples[i])
		}
	}
}
