package retrieval

import (
	"context"
	"slices"
	"testing"
)

func TestTokensChinese(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"unigrams and bigrams", "开发票", []string{"开", "开发", "发", "发票", "票"}},
		{"stop characters only as unigrams", "的发票", []string{"的发", "发", "发票", "票"}},
		{"digits split from Han", "7天退货", []string{"7", "天", "天退", "退", "退货", "货"}},
		{"punctuation separates runs", "退货，退款", []string{"退", "退货", "货", "退", "退款", "款"}},
		{"full-width digits fold", "３０天", []string{"30", "天"}},
		{"mixed with English", "Plus会员", []string{"plus", "会员", "员"}},
		{"single character", "票", []string{"票"}},
		{"question-word bigrams dropped", "怎么退货", []string{"么退", "退", "退货", "货"}},
		{"listed question bigram dropped", "请问运费", []string{"请", "问", "问运", "运", "运费", "费"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tokens(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("tokens(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTokensEnglish(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"lowercase and stop words", "How do I Return an Item?", []string{"return", "item"}},
		{"plurals", "refunds boxes policies", []string{"refund", "box", "policy"}},
		{"ing and ed share a stem", "shipping shipped ships", []string{"ship", "ship", "ship"}},
		{"final e", "charge charged charging", []string{"charg", "charg", "charg"}},
		{"contractions", "don't can't shop's", []string{"shop"}},
		{"numbers kept", "within 30 days", []string{"within", "30", "day"}},
		{"hyphen and symbols separate", "400-820-1688 e-mail", []string{"400", "820", "1688", "mail"}},
		{"single letters dropped", "a b c 7", []string{"7"}},
		{"ss kept", "address addresses", []string{"addres", "addres"}},
		{"derived forms share a stem", "payment payments pay", []string{"pay", "pay", "pay"}},
		{"ation and doubled consonant", "cancellation cancelled cancel", []string{"cancel", "cancel", "cancel"}},
		{"ery, ly, ity, able, al", "delivery monthly security returnable arrival",
			[]string{"deliver", "month", "secur", "return", "arriv"}},
		{"short words keep their suffix", "apply family total", []string{"apply", "family", "total"}},
		{"irregular past forms", "paid bought sent", []string{"pay", "buy", "send"}},
		{"number words", "seven days thirty", []string{"7", "day", "30"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tokens(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("tokens(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTokensBadInput(t *testing.T) {
	for _, in := range []string{"", "   \n\t", "?!。，", "\xff\xfe\xfd", string([]byte{0xe5, 0x8f})} {
		if got := tokens(in); len(got) != 0 {
			t.Errorf("tokens(%q) = %q, want none", in, got)
		}
	}
}

func TestSynonymsExpandQuery(t *testing.T) {
	q := parseQuery("my laptop is broken")
	terms, weights := q.terms, q.weights
	want := map[string]float64{"laptop": 1, "broken": 1, "computer": synonymWeight, "faulty": synonymWeight}
	for i, term := range terms {
		if w, ok := want[term]; ok && w != weights[i] {
			t.Errorf("weight of %q = %v, want %v", term, weights[i], w)
		}
		delete(want, term)
	}
	if len(want) != 0 {
		t.Errorf("query terms %q lack %v", terms, want)
	}
}

// TestSynonymPhrases: a phrase adds its group's words when its terms come
// in a row (stop words aside), and is not searched for itself.
func TestSynonymPhrases(t *testing.T) {
	tests := []struct {
		question  string
		adds, not []string
	}{
		{"can I get my money back", []string{"refund", "reimburs"}, nil},
		{"money for a ticket back", nil, []string{"refund"}},
		{"refund please", []string{"reimburs"}, []string{"money", "back"}},
		{"the kettle stopped working", []string{"faulty", "broken"}, nil},
		{"东西不想要了", []string{"无理", "理由"}, nil},
		{"想要发票", nil, []string{"无理"}},
		{"专票怎么开", []string{"专用", "发票"}, nil},
	}
	for _, tt := range tests {
		q := parseQuery(tt.question)
		for _, w := range tt.adds {
			if i := slices.Index(q.terms, w); i < 0 || q.weights[i] != synonymWeight {
				t.Errorf("%q: terms %q, want %q at weight %v", tt.question, q.terms, w, synonymWeight)
			}
		}
		for _, w := range tt.not {
			if slices.Contains(q.terms, w) {
				t.Errorf("%q: terms %q, want no %q", tt.question, q.terms, w)
			}
		}
	}
}

// TestTokensKeepCombiningMarks guards scripts written with combining
// marks: a vowel sign (Mn, Mc) belongs to its word, so a Hindi knowledge
// base is searchable instead of falling apart into single letters.
func TestTokensKeepCombiningMarks(t *testing.T) {
	if got, want := tokens("रिफंड नीति"), []string{"रिफंड", "नीति"}; !slices.Equal(got, want) {
		t.Errorf("tokens(%q) = %q, want %q", "रिफंड नीति", got, want)
	}
	ix := NewIndex([]Doc{
		{ID: "refund", Title: "रिफंड नीति", Text: "सात दिन में पैसा वापस।"},
		{ID: "shipping", Title: "Shipping", Text: "Parcels ship daily."},
	})
	for _, q := range []string{"रिफंड", "रिफंड नीति"} {
		docs, err := ix.Retrieve(context.Background(), q, 1)
		if err != nil || len(docs) != 1 || docs[0].ID != "refund" {
			t.Errorf("Retrieve(%q) = %v, %v; want the refund document", q, docs, err)
		}
	}
}

// TestTokensThaiPairs: Thai is written without spaces between words, so,
// as Chinese, it is indexed by pairs of adjacent characters, each with its
// vowel signs and tone marks: a question finds an article that shares a
// word with it ("คืนเงิน", refund) although neither is split into words.
func TestTokensThaiPairs(t *testing.T) {
	if got, want := tokens("คืนเงิน"), []string{"คืน", "นเ", "เงิ", "งิน"}; !slices.Equal(got, want) {
		t.Errorf("tokens(%q) = %q, want %q", "คืนเงิน", got, want)
	}
	if got, want := tokens("ก"), []string{"ก"}; !slices.Equal(got, want) {
		t.Errorf("tokens(%q) = %q, want %q", "ก", got, want)
	}
	ix := NewIndex([]Doc{
		{ID: "refund", Title: "นโยบายการคืนเงิน", Text: "คืนเงินภายในเจ็ดวัน"},
		{ID: "shipping", Title: "การจัดส่ง", Text: "จัดส่งทุกวัน"},
	})
	docs, err := ix.Retrieve(context.Background(), "ขอคืนเงินได้ไหม", 1)
	if err != nil || len(docs) != 1 || docs[0].ID != "refund" {
		t.Errorf("Retrieve = %v, %v; want the refund document", docs, err)
	}
}

// TestTokensThaiSignsAndMyanmarExtensions: ฯ (abbreviation) and ๆ
// (repetition) separate Thai terms rather than joining them, and the
// Myanmar extension blocks are paired like Myanmar.
func TestTokensThaiSignsAndMyanmarExtensions(t *testing.T) {
	if got, want := tokens("กรุงเทพฯ"), []string{"กรุ", "รุง", "งเ", "เท", "ทพ"}; !slices.Equal(got, want) {
		t.Errorf("tokens(%q) = %q, want %q", "กรุงเทพฯ", got, want)
	}
	if got, want := tokens("ꩠက"), []string{"ꩠက"}; !slices.Equal(got, want) {
		t.Errorf("tokens(%q) = %q, want %q", "ꩠက", got, want)
	}
}
