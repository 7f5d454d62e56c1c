package cache

import (
	"errors"
	"testing"
)

// TestChineseNumbersBeforeWan guards the reading of Chinese numerals with
// 万: a multiplier before 万 with no digit of its own counts once, so 十万
// is 100000, not 110000, and "十万元" and "十一万元" do not share a cache key
// (the exact-match path would serve one's answer for the other).
func TestChineseNumbersBeforeWan(t *testing.T) {
	for q, want := range map[string]string{
		"十万元": "100000", "二十万元": "200000", "一百万元": "1000000", "十一万元": "110000",
		"一万五千元": "15000", "两万元": "20000", "万元": "10000", "七天": "7",
		"一百零五天": "105", "三千零五元": "3005",
	} {
		if got := signatureOf(q).nums; len(got) != 1 || got[0] != want {
			t.Errorf("signatureOf(%q).nums = %q, want [%s]", q, got, want)
		}
	}
	c := New(Config{})
	emb := NewHashEmbedder(0)
	q1, q2 := "订单满十万元可以分期吗", "订单满十一万元可以分期吗"
	if err := c.Put("acme", q1, embed1(t, emb, q1), Entry{Text: "满10万元可分12期"}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Get("acme", q2, embed1(t, emb, q2), 0); err == nil {
		t.Errorf("Get(%q) served the answer cached for %q: %q", q2, q1, e.Text)
	}
}

// TestNormalizeKeepsSymbolsAndMarks guards what Normalize and the false-hit
// guard must not drop: currency signs and emoji (symbols, each a token of
// its own, compared strictly like numbers) and combining marks (the vowel
// signs of Devanagari or Thai, which belong to their word). Questions that
// differ only there need different answers, and a question left with
// nothing to normalize is neither stored nor matched.
func TestNormalizeKeepsSymbolsAndMarks(t *testing.T) {
	emb := NewHashEmbedder(0)
	for _, p := range [][2]string{
		{"Can I pay in $?", "Can I pay in €?"},
		{"👍", "👎"},
		{"7 दिन में रिफंड?", "7 दान में रिफंड?"},
		// A word longer than the scanner's buffer keeps its end in the key.
		{"ฉันสามารถขอคืนเงินสำหรับสินค้าที่ซื้อเมื่อวันจันทร์ได้ไหม", "ฉันสามารถขอคืนเงินสำหรับสินค้าที่ซื้อเมื่อวันอังคารได้ไหม"},
	} {
		c := New(Config{})
		if err := c.Put("acme", p[0], embed1(t, emb, p[0]), Entry{Text: "answer to " + p[0]}); err != nil {
			t.Fatal(err)
		}
		if e, err := c.Get("acme", p[1], embed1(t, emb, p[1]), 0); err == nil {
			t.Errorf("Get(%q) served %q (similarity %v)", p[1], e.Text, e.Similarity)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"Can I pay in ＄?", "can i pay in $"},
		{"👍️ thanks!", "👍 thanks"}, // a variation selector is no part of the emoji
		{"दिन", "दिन"},
		{"  Where IS my parcel?? ", "where is my parcel"},
		{"如何 开发票？", "如何开发票"},
	} {
		if got := Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	c := New(Config{})
	if err := c.Put("acme", "?!", embed1(t, emb, "?!"), Entry{Text: "punctuation"}); err != nil {
		t.Fatal(err)
	}
	if c.Len("acme") != 0 {
		t.Errorf("Len = %d after Put of a question with an empty key, want 0", c.Len("acme"))
	}
	if err := c.Put("acme", "how do I return an item", embed1(t, emb, "how do I return an item"), Entry{Text: "returns"}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Get("acme", "...", embed1(t, emb, "..."), 0); !errors.Is(err, ErrMiss) {
		t.Errorf("Get(%q) = %q, %v; want ErrMiss", "...", e.Text, err)
	}
}

// TestFullWidthSignsFolded: the yen sign a Chinese keyboard types (￥,
// full width) and the usual one (¥) make one question, in the key and in
// the guard, as full-width letters and digits do.
func TestFullWidthSignsFolded(t *testing.T) {
	a, b := "退货运费￥10谁出", "退货运费¥10谁出"
	if na, nb := Normalize(a), Normalize(b); na != nb {
		t.Errorf("Normalize(%q) = %q, Normalize(%q) = %q", a, na, b, nb)
	}
	emb := NewHashEmbedder(0)
	c := New(Config{})
	if err := c.Put("acme", a, embed1(t, emb, a), Entry{Text: "卖家承担"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("acme", b, embed1(t, emb, b), 0); err != nil {
		t.Errorf("Get(%q) after Put(%q): %v", b, a, err)
	}
}
