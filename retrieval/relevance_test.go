package retrieval_test

import (
	"context"
	"testing"

	"github.com/ragfuse/ragfuse/retrieval"
)

type oodCase struct {
	Question string `json:"question"`
	Topic    string `json:"topic"`
	Lang     string `json:"lang"`
}

func loadOOD(t *testing.T) []oodCase {
	return loadJSONL[oodCase](t, "kb-ood.jsonl")
}

func (c oodCase) question() string { return c.Question }

// TestOutOfDomainGetsNoDocuments guards the relevance floor: questions the
// knowledge base does not cover must get no documents (so the pipeline
// falls through to the static tier), while the in-domain questions of
// kb-eval.jsonl keep their recall.
func TestOutOfDomainGetsNoDocuments(t *testing.T) {
	kb := openTestKB(t)
	cases := loadOOD(t)
	langs := map[string]int{}
	for _, c := range cases {
		langs[c.Lang]++
	}
	if len(cases) < 30 || langs["zh"] < 15 || langs["en"] < 15 {
		t.Fatalf("kb-ood.jsonl has %d questions (%v), want at least 30, half zh and half en", len(cases), langs)
	}
	empty := 0
	for _, c := range cases {
		docs, err := kb.Retrieve(context.Background(), c.Question, 3)
		if err != nil {
			t.Fatalf("%q: %v", c.Question, err)
		}
		if len(docs) == 0 {
			empty++
			continue
		}
		t.Logf("leak: %q (%s) got %v", c.Question, c.Topic, ids(docs))
	}
	share := float64(empty) / float64(len(cases))
	r := recallAt(t, kb, loadEval(t), 3)
	t.Logf("out-of-domain with no documents = %.3f (%d/%d); recall@3 = %.3f", share, empty, len(cases), r["all"])
	if share < 0.9 {
		t.Errorf("%d of %d out-of-domain questions got no documents (%.3f), want >= 0.9", empty, len(cases), share)
	}
	if r["all"] < 0.85 {
		t.Errorf("recall@3 = %.3f, want >= 0.85", r["all"])
	}
}

// TestRelevanceFloor is the regression test for questions that matched
// articles through a question word or one common character.
func TestRelevanceFloor(t *testing.T) {
	kb := openTestKB(t)
	ctx := context.Background()
	// 怎么办 ("what should I do") is a question phrase like 怎么 and 如何:
	// it must not match the articles whose titles end in it.
	for _, q := range []string{"企鹅怎么飞", "怎么", "如何", "what can I do", "penguins",
		"怎么办", "感冒了怎么办", "企鹅怎么办", "下雨了该怎么办呢"} {
		if docs, err := kb.Retrieve(ctx, q, 3); err != nil || len(docs) != 0 {
			t.Errorf("Retrieve(%q) = %v, %v; want no documents", q, ids(docs), err)
		}
	}
	for q, want := range map[string]string{
		"如何开发票":                      "zh-invoice-issue",
		"七天无理由退货怎么退":                 "zh-return-7day",
		"how do I cancel an invoice": "en-invoice-cancel",
		"付款失败怎么办":                    "zh-payment-failed",
		"忘记登录密码怎么办":                  "zh-account-reset-password",
		"买贵了怎么办":                     "zh-price-protection",
	} {
		docs, err := kb.Retrieve(ctx, q, 3)
		if err != nil || !contains(ids(docs), want) {
			t.Errorf("Retrieve(%q) = %v, %v; want %s among them", q, ids(docs), err, want)
		}
	}
}

func TestMinCoverageConfig(t *testing.T) {
	docs := []retrieval.Doc{
		{ID: "ship", Title: "Shipping", Text: "Parcels ship daily from our warehouse; bad weather can delay them."},
		{ID: "pay", Title: "Payment", Text: "We take cards."},
	}
	ctx := context.Background()
	const q = "what is the weather on mars" // one body word, one unknown word
	tests := []struct {
		name string
		cfg  retrieval.IndexConfig
		want int
	}{
		{"default floor", retrieval.IndexConfig{}, 0},
		{"negative disables the floor", retrieval.IndexConfig{MinCoverage: -1}, 1},
		{"low floor", retrieval.IndexConfig{MinCoverage: 0.05}, 1},
		{"full coverage", retrieval.IndexConfig{MinCoverage: 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := retrieval.NewIndexConfig(docs, tt.cfg).Retrieve(ctx, q, 3)
			if err != nil || len(got) != tt.want {
				t.Errorf("got %v, %v; want %d documents", ids(got), err, tt.want)
			}
		})
	}
	t.Run("full coverage through the title", func(t *testing.T) {
		got, err := retrieval.NewIndexConfig(docs, retrieval.IndexConfig{MinCoverage: 1}).Retrieve(ctx, "shipping", 3)
		if err != nil || len(got) != 1 || got[0].ID != "ship" {
			t.Errorf("got %v, %v; want [ship]", ids(got), err)
		}
	})
	t.Run("NewIndex uses the default", func(t *testing.T) {
		a, _ := retrieval.NewIndex(docs).Retrieve(ctx, q, 3)
		b, _ := retrieval.NewIndexConfig(docs, retrieval.IndexConfig{MinCoverage: retrieval.DefaultMinCoverage}).Retrieve(ctx, q, 3)
		if len(a) != len(b) {
			t.Errorf("NewIndex gave %v, the default config %v", ids(a), ids(b))
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
