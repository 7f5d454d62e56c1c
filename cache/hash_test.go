package cache

import (
	"context"
	"math"
	"sync"
	"testing"
)

func embed1(t testing.TB, e Embedder, s string) []float32 {
	t.Helper()
	v, err := e.Embed(context.Background(), []string{s})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestHashEmbedderSimilarity(t *testing.T) {
	e := NewHashEmbedder(0)
	close := [][2]string{
		{"How do I return an item?", "how can I return an item"},
		{"How do I return an item?", "How do I return items, please?"},
		{"reset my password", "How can I reset my password?"},
		{"What is the shipping fee to Canada", "what's the shipping fee to canada?"},
		{"如何开发票", "怎么开发票？"},
		{"请问退款多久到账", "退款多久能到账呢"},
		{"七天无理由退货", "7天无理由退货"},
		{"会员积分怎么兑换", "请问会员积分如何兑换"},
	}
	far := [][2]string{
		{"How do I return an item?", "What payment methods do you accept"},
		{"reset my password", "track my parcel"},
		{"如何开发票", "运费怎么算"},
		{"会员积分怎么兑换", "手机坏了保修吗"},
		{"How do I return an item?", "如何开发票"},
	}
	for _, p := range close {
		if c := cosine(embed1(t, e, p[0]), embed1(t, e, p[1])); c < 0.92 {
			t.Errorf("cos(%q, %q) = %.3f, want >= 0.92", p[0], p[1], c)
		}
	}
	for _, p := range far {
		if c := cosine(embed1(t, e, p[0]), embed1(t, e, p[1])); c > 0.3 {
			t.Errorf("cos(%q, %q) = %.3f, want <= 0.3", p[0], p[1], c)
		}
	}
}

func TestHashEmbedderVectors(t *testing.T) {
	for _, tc := range []struct {
		dim, want int
	}{{0, 256}, {-3, 256}, {64, 64}, {1024, 1024}} {
		e := NewHashEmbedder(tc.dim)
		for _, text := range []string{"", "?!…", "hello", "退款", "a\xffb", "ＡＢＣ１２３"} {
			v := embed1(t, e, text)
			if len(v) != tc.want {
				t.Fatalf("dim %d: len = %d, want %d", tc.dim, len(v), tc.want)
			}
			var ss float64
			for _, f := range v {
				if math.IsNaN(float64(f)) {
					t.Fatalf("NaN in embedding of %q", text)
				}
				ss += float64(f) * float64(f)
			}
			if math.Abs(ss-1) > 1e-5 {
				t.Errorf("dim %d %q: norm² = %v, want 1", tc.dim, text, ss)
			}
		}
	}
}

// TestHashEmbedderStable pins the hash so that vectors agree across
// processes and releases (a cache shared over restarts relies on it).
func TestHashEmbedderStable(t *testing.T) {
	if got := hashBytes(fWord, []byte("refund")); got != 0x5218692f1449c3a6 {
		t.Errorf("hashBytes = %#x; the hash changed, which invalidates stored vectors", got)
	}
	a := embed1(t, NewHashEmbedder(0), "Refund my order 123")
	b := embed1(t, NewHashEmbedder(0), "Refund my order 123")
	if cosine(a, b) < 0.999999 {
		t.Error("two embedders disagree")
	}
}

func TestHashEmbedderAllocs(t *testing.T) {
	e := NewHashEmbedder(0)
	dst := make([]float32, e.Dim())
	allocs := testing.AllocsPerRun(100, func() {
		e.EmbedInto(dst, "Can I return my order after 30 days? 如何申请七天无理由退货")
	})
	if allocs != 0 {
		t.Errorf("EmbedInto allocates %v times, want 0", allocs)
	}
}

func TestHashEmbedderConcurrent(t *testing.T) {
	e := NewHashEmbedder(0)
	want := embed1(t, e, "where is my parcel 包裹在哪里")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				v, _ := e.Embed(context.Background(), []string{"where is my parcel 包裹在哪里"})
				if cosine(v[0], want) < 0.999999 {
					t.Error("concurrent embedding differs")
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestHashEmbedderCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewHashEmbedder(0).Embed(ctx, []string{"x"}); err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func BenchmarkHashEmbed(b *testing.B) {
	e := NewHashEmbedder(0)
	dst := make([]float32, e.Dim())
	for _, q := range []string{"Can I return my order after 30 days if the box is opened?", "七天无理由退货的商品需要保持包装完好吗"} {
		b.Run(q[:6], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.EmbedInto(dst, q)
			}
		})
	}
}
