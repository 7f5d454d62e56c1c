package cache

import (
	"errors"
	"testing"
	"time"
)

// falseHitPairs must never share an answer.
var falseHitPairs = [][2]string{
	{"Can I return an item after 7 days?", "Can I return an item after 30 days?"},
	{"Is shipping free over $50?", "Is shipping free over $100?"},
	{"Can I return a sale item?", "Can I not return a sale item?"},
	{"How do I renew my membership?", "How do I cancel my membership?"},
	{"Can I pay with PayPal?", "Can I pay without PayPal?"},
	{"Do you ship to Canada?", "Do you ship to Mexico?"},
	{"How do I return shoes?", "How do I return a phone?"},
	{"Why was I charged twice?", "Why was I not charged?"},
	{"如何开发票", "如何取消发票"},
	{"七天内可以退货吗", "三十天内可以退货吗"},
	{"订单可以退款吗", "订单不可以退款吗"},
	{"如何开通会员自动续费", "如何关闭会员自动续费"},
	{"满200元包邮吗", "满99元包邮吗"},
	{"收到货15天内能换货吗", "收到货7天内能换货吗"},
	{"为什么没有收到退款", "为什么收到退款"},
	{"苹果手机保修多久", "苹果电脑保修多久"},
	{"Can I send 2 parcels in 3 days?", "Can I send 3 parcels in 2 days?"},
}

// paraphrasePairs must keep hitting.
var paraphrasePairs = [][2]string{
	{"How do I return an item?", "how can I return an item"},
	{"How do I return an item?", "How do I return items, please?"},
	{"Can I return an item after 7 days?", "can i return items after 7 days"},
	{"How do I cancel my membership?", "How can I cancel my membership, please?"},
	{"What's the shipping fee to Canada?", "what is the shipping fee to canada"},
	{"如何开发票", "怎么开发票？"},
	{"请问退款多久到账", "退款多久能到账呢"},
	{"七天无理由退货", "7天无理由退货"},
	{"能不能开发票", "如何开发票"},
	{"会员积分怎么兑换", "请问会员积分如何兑换"},
}

func TestCompatible(t *testing.T) {
	for _, p := range falseHitPairs {
		if Compatible(p[0], p[1]) || Compatible(p[1], p[0]) {
			t.Errorf("Compatible(%q, %q) = true, want false", p[0], p[1])
		}
	}
	for _, p := range paraphrasePairs {
		if !Compatible(p[0], p[1]) || !Compatible(p[1], p[0]) {
			t.Errorf("Compatible(%q, %q) = false, want true", p[0], p[1])
		}
	}
}

// TestGuardRejectsSimilarHits shows the guard at work inside the cache: at a
// similarity threshold low enough for every pair to be a candidate, none of
// the false-hit pairs shares an answer and the guard counts the rejections.
func TestGuardRejectsSimilarHits(t *testing.T) {
	e := NewHashEmbedder(0)
	for _, p := range falseHitPairs {
		c := New(Config{Similarity: 0.3, Clock: newManualClock()})
		if err := c.Put("t", p[0], embed1(t, e, p[0]), Entry{Text: "answer for " + p[0]}); err != nil {
			t.Fatal(err)
		}
		if got, err := c.Get("t", p[1], embed1(t, e, p[1]), 0); !errors.Is(err, ErrMiss) {
			t.Errorf("Get(%q) after Put(%q) = %q, %v; want ErrMiss", p[1], p[0], got.Text, err)
		}
		if c.Stats().GuardRejects != 1 {
			t.Errorf("%q / %q: GuardRejects = %d, want 1", p[0], p[1], c.Stats().GuardRejects)
		}
	}
}

func TestParaphrasesHit(t *testing.T) {
	e := NewHashEmbedder(0)
	for _, p := range paraphrasePairs {
		c := New(Config{Clock: newManualClock()}) // default similarity 0.92
		if err := c.Put("t", p[0], embed1(t, e, p[0]), Entry{Text: "A"}); err != nil {
			t.Fatal(err)
		}
		got, err := c.Get("t", p[1], embed1(t, e, p[1]), 0)
		if err != nil || got.Text != "A" {
			t.Errorf("Get(%q) after Put(%q) = %q, %v; want a hit", p[1], p[0], got.Text, err)
		}
	}
}

func TestSignatureNumbers(t *testing.T) {
	for _, tc := range []struct {
		q    string
		nums []string
	}{
		{"after 07 days", []string{"7"}},
		{"七天", []string{"7"}},
		{"三十天", []string{"30"}},
		{"二十五个", []string{"25"}},
		{"一百元", []string{"100"}},
		{"两小时", []string{"2"}},
		{"查一下订单", nil},
		{"统一发票", nil},
		{"3.5 kg", []string{"3.5"}},
		{"ＡＢＣ１２３", nil}, // a code, a word, not a number
	} {
		got := signatureOf(tc.q).nums
		if len(got) != len(tc.nums) {
			t.Errorf("%q: nums = %q, want %q", tc.q, got, tc.nums)
			continue
		}
		for i := range got {
			if got[i] != tc.nums[i] {
				t.Errorf("%q: nums = %q, want %q", tc.q, got, tc.nums)
			}
		}
	}
}

func FuzzText(f *testing.F) {
	for _, p := range falseHitPairs {
		f.Add(p[0])
		f.Add(p[1])
	}
	f.Add("can't 不 \xff '' 0.0. 十万零 一")
	e := NewHashEmbedder(32)
	dst := make([]float32, 32)
	f.Fuzz(func(t *testing.T, s string) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			Normalize(s)
			signatureOf(s)
			e.EmbedInto(dst, s)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("text processing does not terminate on %q", s)
		}
	})
}

// TestGuardKeepsNumberOrder guards against comparing numbers as a set:
// the same numbers in another order ask a different question.
func TestGuardKeepsNumberOrder(t *testing.T) {
	if Compatible("question 2 from worker 0", "question 0 from worker 2") {
		t.Error("questions with swapped numbers are compatible")
	}
}
