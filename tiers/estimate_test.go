package tiers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"abcd", 1},
		{"abcde", 2},
		{"退货", 2},
		{"退货 policy", 4}, // two Han runes, " policy" is 7 bytes
		{"é", 1},
	} {
		if got := EstimateTokens(tc.s); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// TestEstimatePromptAgainstUsage measures the prompt estimate of the
// evaluation questions' RAG prompts against the usage the llmtest server
// reports for them, per language, and holds the mean error to the band
// docs/performance.md states. llmtest counts a token per word or CJK rune
// and one per message; BPE tokenizers make about 1.3 of an English word.
func TestEstimatePromptAgainstUsage(t *testing.T) {
	kb, err := retrieval.Open("../testdata/kb")
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(llmtest.Config{})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()
	l := NewLLM(LLMConfig{Retriever: kb, ContextDocs: 3,
		Candidates: []Candidate{{ID: "m", Client: NewClient(ClientConfig{BaseURL: hs.URL + "/v1", APIKey: "k"})}}})
	f, err := os.Open("../testdata/kb-eval.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type tally struct{ n, sum, abs, worst float64 }
	by := map[string]*tally{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q struct{ Question, Lang string }
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		docs, _ := l.documents(context.Background(), Query{Question: q.Question})
		est := estimatePrompt(buildMessages(l.system, q.Question, historyMessages(nil, l.turns), docs))
		a, err := l.Answer(context.Background(), Query{Question: q.Question})
		if err != nil {
			t.Fatal(err)
		}
		rel := float64(est-a.Usage.PromptTokens) / float64(a.Usage.PromptTokens)
		tl := by[q.Lang]
		if tl == nil {
			tl = &tally{}
			by[q.Lang] = tl
		}
		tl.n++
		tl.sum += rel
		tl.abs += math.Abs(rel)
		tl.worst = max(tl.worst, math.Abs(rel))
	}
	// The bands: the estimate follows BPE tokenizers, above llmtest's
	// word count for English, near it for Chinese (one token per rune).
	bands := map[string][2]float64{"en": {0.10, 0.60}, "zh": {-0.25, 0.25}}
	for lang, tl := range by {
		mean := tl.sum / tl.n
		t.Logf("%s: %d prompts, estimate vs llmtest usage: mean %+.1f%%, mean |error| %.1f%%, worst %.1f%%",
			lang, int(tl.n), 100*mean, 100*tl.abs/tl.n, 100*tl.worst)
		if b, ok := bands[lang]; ok && (mean < b[0] || mean > b[1]) {
			t.Errorf("%s: mean error %+.1f%% outside [%+.0f%%, %+.0f%%]", lang, 100*mean, 100*b[0], 100*b[1])
		}
	}
	if len(by) < 2 {
		t.Fatalf("languages measured: %v", by)
	}
}

// TestFailedCallsCarryThePromptEstimate: a call that times out, or whose
// stream is cut, reports the estimate of the prompt it sent as its spent
// prompt tokens; a refusal (HTTP 500) reports none.
func TestFailedCallsCarryThePromptEstimate(t *testing.T) {
	srv := llmtest.New(llmtest.Config{})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()
	l := NewLLM(LLMConfig{Candidates: []Candidate{{ID: "m", Client: NewClient(ClientConfig{BaseURL: hs.URL + "/v1", APIKey: "k"})}}})
	want := estimatePrompt(buildMessages(l.system, "Where is my parcel?", historyMessages(nil, l.turns), nil))
	for _, tc := range []struct {
		fault  llmtest.Fault
		stream bool
		prompt int
	}{
		{llmtest.Fault{Mode: llmtest.ModeHang}, false, want},
		{llmtest.Fault{Mode: llmtest.ModeHang}, true, want},
		{llmtest.Fault{Mode: llmtest.ModeBreak, After: 2}, true, want},
		{llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500}, false, 0},
	} {
		srv.SetFault("m", tc.fault)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		var err error
		if tc.stream {
			_, err = l.AnswerStream(ctx, Query{Question: "Where is my parcel?"}, StreamRequest{})
		} else {
			_, err = l.Answer(ctx, Query{Question: "Where is my parcel?"})
		}
		cancel()
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: %v, not an *Error", tc.fault.Mode, err)
		}
		if e.Usage.PromptTokens != tc.prompt {
			t.Errorf("%s (stream %v): %v, prompt tokens %d; want %d", tc.fault.Mode, tc.stream, err, e.Usage.PromptTokens, tc.prompt)
		}
	}
}
