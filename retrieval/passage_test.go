package retrieval_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragfuse/ragfuse/retrieval"
)

func TestBestPassage(t *testing.T) {
	kb := openTestKB(t)
	doc := func(id string) retrieval.Doc {
		d, ok := kb.Get(id)
		if !ok {
			t.Fatalf("no article %s", id)
		}
		return d
	}
	tests := []struct {
		name, query, id string
		want            string // a substring of the passage
		opening         bool   // the passage is the text's opening
	}{
		{"the paragraph that answers", "退货的运费谁出", "zh-return-7day", "寄回运费由您承担", false},
		{"a list item's paragraph", "Do you take Mastercard?", "en-payment-methods", "Mastercard", true},
		{"a later paragraph in English", "When are levels recalculated?", "en-member-levels", "recalculated on the 1st", false},
		{"a window of list lines", "is the hotline open on Sunday", "en-contact-service", "Hotline: 400-820-1688", false},
		{"an introduction takes what it introduces", "寄回商品的快递费要我自己出吗？", "zh-return-shipping-fee", "运费由买家承担", true},
		{"no shared word gives the opening", "penguins", "en-refund-timeline", "Refunds start as soon as", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := doc(tt.id)
			p := retrieval.BestPassage(tt.query, d, 280)
			if !strings.Contains(p.Text, tt.want) {
				t.Errorf("passage %q lacks %q", p.Text, tt.want)
			}
			if (p.Start == 0) != tt.opening {
				t.Errorf("passage starts at %d; want opening %v", p.Start, tt.opening)
			}
			if n := utf8.RuneCountInString(p.Text); n > 280 {
				t.Errorf("passage has %d runes, want <= 280", n)
			}
			if !strings.HasPrefix(d.Text[p.Start:], strings.TrimSuffix(p.Text, "…")) && !strings.Contains(d.Text[p.Start:p.End], strings.TrimSuffix(p.Text, "…")) {
				t.Errorf("passage %q is not at [%d:%d] of the text", p.Text, p.Start, p.End)
			}
		})
	}
}

// TestBestPassageLongParagraph: a paragraph longer than the limit is
// quoted by the window of sentences that answers, cut on a word boundary.
func TestBestPassageLongParagraph(t *testing.T) {
	text := strings.Repeat("Our shop sells many kinds of goods. ", 10) +
		"Refunds reach credit cards within seven days. " + strings.Repeat("Opening hours are long. ", 10)
	p := retrieval.BestPassage("how long until the refund reaches my card", retrieval.Doc{Text: text}, 80)
	if !strings.Contains(p.Text, "Refunds reach credit cards") || utf8.RuneCountInString(p.Text) > 80 {
		t.Errorf("passage = %q, want the refund sentence within 80 runes", p.Text)
	}
	if p.Start == 0 || p.End == len(text) {
		t.Errorf("passage at [%d:%d], want inside the text", p.Start, p.End)
	}
	long := retrieval.BestPassage("goods", retrieval.Doc{Text: strings.Repeat("word ", 100)}, 20)
	if !strings.HasSuffix(long.Text, "…") || utf8.RuneCountInString(long.Text) > 20 {
		t.Errorf("an over-long sentence = %q, want cut to 20 runes with …", long.Text)
	}
	if got := retrieval.BestPassage("x", retrieval.Doc{}, 0); got.Text != "" {
		t.Errorf("empty text gives %q", got.Text)
	}
}

// FuzzBestPassage: any text and question give a passage within the limit
// that is part of the text, without panicking.
func FuzzBestPassage(f *testing.F) {
	f.Add("退款多久到账", "第一段。\n\n第二段：\n- 一\n- 二", 10)
	f.Add("a", "\n\n\n", 0)
	f.Add("x.y", "a.b. c! d?\xff\xfe e；f", 3)
	f.Fuzz(func(t *testing.T, q, text string, n int) {
		n = (n%400+400)%400 + 1
		p := retrieval.BestPassage(q, retrieval.Doc{Text: text}, n)
		if utf8.RuneCountInString(p.Text) > n {
			t.Errorf("passage of %d runes, limit %d", utf8.RuneCountInString(p.Text), n)
		}
		if p.Start < 0 || p.End > len(text) || p.Start > p.End {
			t.Fatalf("span [%d:%d] outside the text of %d bytes", p.Start, p.End, len(text))
		}
		if !strings.Contains(text[p.Start:p.End], strings.TrimSuffix(p.Text, "…")) {
			t.Errorf("passage %q is not in its span %q", p.Text, text[p.Start:p.End])
		}
	})
}
