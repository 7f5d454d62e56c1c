package retrieval_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ragfuse/ragfuse/retrieval"
)

type evalCase struct {
	Question string `json:"question"`
	ID       string `json:"id"`
	Lang     string `json:"lang"`
}

func loadEval(t testing.TB) []evalCase {
	return loadJSONL[evalCase](t, "kb-eval.jsonl")
}

// loadJSONL reads testdata/name, one T per line; a line that does not
// decode, or has no question, fails the test.
func loadJSONL[T interface{ question() string }](t testing.TB, name string) []T {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []T
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var c T
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil || c.question() == "" {
			t.Fatalf("%s:%d: bad case (%v)", name, line, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func (c evalCase) question() string { return c.Question }

func openTestKB(t testing.TB) *retrieval.KnowledgeBase {
	t.Helper()
	kb, err := retrieval.Open(filepath.Join("..", "testdata", "kb"))
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// recallAt returns the share of cases whose article is among the top k
// results of r, per language and overall, and logs the misses.
func recallAt(t *testing.T, r retrieval.Retriever, cases []evalCase, k int) map[string]float64 {
	t.Helper()
	return recall(t, r, cases, k, true)
}

// recall is recallAt, logging the misses only if logMisses is set (the
// misses of the held-out set stay unseen, so nobody tunes on them).
func recall(t *testing.T, r retrieval.Retriever, cases []evalCase, k int, logMisses bool) map[string]float64 {
	t.Helper()
	hits, total := map[string]int{}, map[string]int{}
	for _, c := range cases {
		docs, err := r.Retrieve(context.Background(), c.Question, k)
		if err != nil {
			t.Fatalf("%q: %v", c.Question, err)
		}
		total[c.Lang]++
		total["all"]++
		found := false
		for _, d := range docs {
			if d.ID == c.ID {
				found = true
			}
		}
		if found {
			hits[c.Lang]++
			hits["all"]++
			continue
		}
		if logMisses {
			t.Logf("miss: %q want %s, got %v", c.Question, c.ID, ids(docs))
		}
	}
	out := map[string]float64{}
	for lang, n := range total {
		out[lang] = float64(hits[lang]) / float64(n)
	}
	return out
}

func TestRecallAt3(t *testing.T) {
	kb := openTestKB(t)
	cases := loadEval(t)
	if len(cases) < 80 {
		t.Fatalf("kb-eval.jsonl has %d questions, want at least 80", len(cases))
	}
	for _, c := range cases {
		if _, ok := kb.Get(c.ID); !ok {
			t.Errorf("kb-eval.jsonl: %q names unknown article %q", c.Question, c.ID)
		}
	}
	r := recallAt(t, kb, cases, 3)
	r1 := recallAt(t, kb, cases, 1)
	t.Logf("recall@3 = %.3f (zh %.3f, en %.3f); recall@1 = %.3f over %d questions and %d articles",
		r["all"], r["zh"], r["en"], r1["all"], len(cases), kb.Len())
	if r["all"] < 0.85 {
		t.Errorf("recall@3 = %.3f, want >= 0.85", r["all"])
	}
}

// TestConfusablePairs guards pairs of questions that differ in one word
// or number and must rank different articles first.
func TestConfusablePairs(t *testing.T) {
	kb := openTestKB(t)
	tests := []struct{ question, first string }{
		{"如何开发票", "zh-invoice-issue"},
		{"如何取消发票", "zh-invoice-cancel"},
		{"七天无理由退货怎么退", "zh-return-7day"},
		{"质量问题30天内可以退吗", "zh-return-30day-quality"},
		{"修改登录密码", "zh-account-change-password"},
		{"忘记密码怎么办", "zh-account-reset-password"},
		{"can I return an item after 7 days", "en-return-7day"},
		{"can I return a faulty item after 30 days", "en-return-30day-quality"},
		{"how do I cancel an invoice", "en-invoice-cancel"},
		{"how do I get an invoice", "en-invoice-issue"},
	}
	for _, tt := range tests {
		docs, err := kb.Retrieve(context.Background(), tt.question, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) == 0 || docs[0].ID != tt.first {
			var got []string
			for _, d := range docs {
				got = append(got, d.ID)
			}
			t.Errorf("%q: got %v, want %s first", tt.question, got, tt.first)
		}
	}
}
