package api

import (
	"strings"
	"testing"

	"github.com/ragfuse/ragfuse/tiers"
)

func TestNotebookLanguage(t *testing.T) {
	nb, err := newNotebook("zh", nil)
	if err != nil {
		t.Fatal(err)
	}
	for header, want := range map[string]string{
		"":                         "zh",
		"en":                       "en",
		"en-US,en;q=0.9":           "en",
		"zh-CN,zh;q=0.9,en;q=0.8":  "zh",
		"fr-FR,fr;q=0.9,en;q=0.5":  "en",
		"fr":                       "zh",
		"en;q=0.2, zh-TW;q=0.7":    "zh",
		"en;q=bogus, zh;q=0.1":     "zh",
		"*":                        "zh",
		"EN-gb":                    "en",
		",,;;q=,en;q=0":            "zh",
		strings.Repeat("x,", 1000): "zh",
	} {
		if got := nb.language(header, ""); got != want {
			t.Errorf("language(%q) = %q, want %q", header, got, want)
		}
	}
}

// TestNotebookLanguageOfQuestion: without a supported language in
// Accept-Language, the notes follow the question's script (Han: zh,
// another letter: en), and the default without letters.
func TestNotebookLanguageOfQuestion(t *testing.T) {
	for _, def := range []string{"zh", "en"} {
		nb, err := newNotebook(def, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ header, question, want string }{
			{"", "How long do I have to return a jacket?", "en"},
			{"", "退货要多久？", "zh"},
			{"", "my 订单 is late", "zh"},
			{"", "Où est ma commande ?", "en"},
			{"", "???  123", def},
			{"fr-FR", "where is my order", "en"},
			{"*", "我的订单在哪", "zh"},
			{"zh-CN", "where is my order", "zh"},
			{"en;q=0.5", "我的订单在哪", "en"},
		} {
			if got := nb.language(tc.header, tc.question); got != tc.want {
				t.Errorf("default %s: language(%q, %q) = %q, want %q", def, tc.header, tc.question, got, tc.want)
			}
		}
	}
}

// TestNotebookLanguageQValues: the q parameter is named in any case (RFC
// 9110), and a q that is no number in [0, 1] (NaN among them) makes its
// entry invalid instead of letting it win.
func TestNotebookLanguageQValues(t *testing.T) {
	nb, err := newNotebook("zh", nil)
	if err != nil {
		t.Fatal(err)
	}
	for header, want := range map[string]string{
		"zh;Q=0.1, en;q=0.9":         "en",
		"zh;q=0.1, en;Q=0.9":         "en",
		"en;Q=0.1, zh;Q=0.9":         "zh",
		"en ; Q=0.8, zh;q=0.5":       "en",
		"en;level=1;q=0.9, zh;q=0.5": "en",
		"en;q=NaN, zh;q=0.1":         "zh",
		"en;q=nan":                   "zh",
		"en;Q=NaN":                   "zh",
		"en;q=+Inf, zh;q=0.1":        "zh",
		"en;q=-0.5, zh;q=0.1":        "zh",
		"en;q=1.5, zh;q=0.1":         "zh",
		"en;q=, zh;q=0.1":            "zh",
	} {
		if got := nb.language(header, ""); got != want {
			t.Errorf("language(%q) = %q, want %q", header, got, want)
		}
	}
	nb, err = newNotebook("en", nil)
	if err != nil {
		t.Fatal(err)
	}
	for header, want := range map[string]string{
		"zh;q=NaN, en;q=0.1": "en",
		"zh;Q=NaN":           "en",
		"en;Q=0.1, zh;q=0.9": "zh",
	} {
		if got := nb.language(header, ""); got != want {
			t.Errorf("default en: language(%q) = %q, want %q", header, got, want)
		}
	}
}

func TestNotebookDefaults(t *testing.T) {
	nb, err := newNotebook("en", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		lang    string
		source  tiers.Source
		note    string
		actions Actions
	}{
		{"zh", tiers.SourcePrimary, "", Actions{}},
		{"zh", tiers.SourceCache, "", Actions{}},
		{"zh", tiers.SourceFallback, "当前使用备用服务，回答质量可能略有下降。", Actions{Refresh: true}},
		{"en", tiers.SourceFallback, "Answered by the backup model; quality may be slightly lower.", Actions{Refresh: true}},
		{"zh", tiers.SourceRetrieval, "AI助手暂时不可用，以下是知识库中最相关的文章。", Actions{RetryLater: true}},
		{"en", tiers.SourceStatic, "We cannot answer automatically right now; you can contact customer service.", Actions{CustomerService: true}},
		{"en", tiers.SourceStaleCache, "Automatic answers are temporarily unavailable; this is an earlier answer and may be out of date.", Actions{Refresh: true}},
	}
	for _, tc := range tests {
		n := nb.note(tc.lang, tc.source)
		if n.Text != tc.note || n.Actions != tc.actions {
			t.Errorf("note(%s, %s) = %+v, want %q %+v", tc.lang, tc.source, n, tc.note, tc.actions)
		}
	}
}

func TestNotebookOverrides(t *testing.T) {
	no := false
	yes := true
	nb, err := newNotebook("zh", Notes{
		"en": {"static": {Text: "Call us on 800.", CustomerService: &no, RetryLater: &yes}},
		"ja": {"fallback": {Text: "予備のモデルが回答しました。"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := nb.note("en", tiers.SourceStatic); n.Text != "Call us on 800." || n.Actions != (Actions{RetryLater: true}) {
		t.Errorf("en static = %+v", n)
	}
	// Untouched entries keep their defaults.
	if n := nb.note("en", tiers.SourceFallback); !n.Actions.Refresh || n.Text == "" {
		t.Errorf("en fallback = %+v", n)
	}
	// A new language gets its override and the default language elsewhere.
	if nb.language("ja-JP", "") != "ja" {
		t.Fatalf("ja not selectable")
	}
	if n := nb.note("ja", tiers.SourceFallback); n.Text != "予備のモデルが回答しました。" || !n.Actions.Refresh {
		t.Errorf("ja fallback = %+v", n)
	}
	if n := nb.note("ja", tiers.SourceRetrieval); n.Text != defaultNotes["zh"][tiers.SourceRetrieval].Text {
		t.Errorf("ja retrieval = %+v, want the zh default", n)
	}
}

func TestNotebookRejectsBadConfig(t *testing.T) {
	if _, err := newNotebook("zh", Notes{"en": {"primay": {Text: "x"}}}); err == nil ||
		!strings.Contains(err.Error(), "notes.en.primay") {
		t.Errorf("unknown source: err = %v", err)
	}
	if _, err := newNotebook("fr", nil); err == nil || !strings.Contains(err.Error(), "server.default_language") {
		t.Errorf("unknown default language: err = %v", err)
	}
}
