package retrieval_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ragfuse/ragfuse/retrieval"
)

func ids(docs []retrieval.Doc) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

var smallDocs = []retrieval.Doc{
	{ID: "invoice-issue", Title: "如何开具发票", Text: "下单时勾选开具发票，填写抬头和税号，订单完成后 48 小时内开出电子发票。"},
	{ID: "invoice-cancel", Title: "如何取消发票", Text: "尚未开出的发票可以取消申请；已开出的电子发票申请作废，开具红字发票冲销。"},
	{ID: "returns", Title: "Returns within 7 days", Text: "Return unused items within 7 days of delivery for a refund.", Tags: []string{"returns"}},
	{ID: "warranty", Title: "Warranty", Text: "Electronics have a one-year warranty. We repair faulty items for free."},
	{ID: "shipping", Title: "Shipping", Text: "Orders ship within one day; delivery takes 1 to 3 days."},
}

func TestIndexRetrieve(t *testing.T) {
	ix := retrieval.NewIndex(smallDocs)
	ctx := context.Background()
	tests := []struct {
		query string
		first string
	}{
		{"怎么开发票", "invoice-issue"},
		{"发票不要了，能取消吗", "invoice-cancel"},
		{"can I return it?", "returns"},
		{"my item is broken", "warranty"}, // through the broken/faulty synonym
		{"RETURNS", "returns"},
		{"how long does delivery take", "shipping"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			docs, err := ix.Retrieve(ctx, tt.query, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) == 0 || docs[0].ID != tt.first {
				t.Fatalf("Retrieve(%q) = %v, want %s first", tt.query, ids(docs), tt.first)
			}
			for i := 1; i < len(docs); i++ {
				if docs[i].Score > docs[i-1].Score {
					t.Errorf("results not sorted by score: %v", docs)
				}
			}
			if docs[0].Score <= 0 {
				t.Errorf("Score = %v, want > 0", docs[0].Score)
			}
		})
	}
}

func TestIndexEdgeCases(t *testing.T) {
	ix := retrieval.NewIndex(smallDocs)
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		query string
		k     int
	}{
		{"k zero", "发票", 0},
		{"k negative", "发票", -1},
		{"empty query", "", 3},
		{"blank query", " \t\n ", 3},
		{"only punctuation", "？！...", 3},
		{"only stop words", "how do I", 3},
		{"unknown words", "zzzz qqqq", 3},
		{"invalid UTF-8", "\xff\xfe", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := ix.Retrieve(ctx, tt.query, tt.k)
			if err != nil || len(docs) != 0 {
				t.Errorf("Retrieve(%q, %d) = %v, %v; want nothing, no error", tt.query, tt.k, ids(docs), err)
			}
		})
	}
	t.Run("k larger than matches", func(t *testing.T) {
		docs, err := ix.Retrieve(ctx, "发票", 100)
		if err != nil || len(docs) != 2 {
			t.Errorf("got %v, %v; want the 2 invoice documents", ids(docs), err)
		}
	})
	t.Run("empty index", func(t *testing.T) {
		docs, err := retrieval.NewIndex(nil).Retrieve(ctx, "发票", 3)
		if err != nil || len(docs) != 0 {
			t.Errorf("got %v, %v; want nothing", ids(docs), err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := ix.Retrieve(cctx, "发票", 3); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}

func TestIndexTiesBrokenByID(t *testing.T) {
	docs := []retrieval.Doc{
		{ID: "c", Title: "same", Text: "refund policy"},
		{ID: "a", Title: "same", Text: "refund policy"},
		{ID: "b", Title: "same", Text: "refund policy"},
	}
	ix := retrieval.NewIndex(docs)
	for range 20 {
		got, err := ix.Retrieve(context.Background(), "refund", 3)
		if err != nil {
			t.Fatal(err)
		}
		if g := ids(got); g[0] != "a" || g[1] != "b" || g[2] != "c" {
			t.Fatalf("order = %v, want [a b c]", g)
		}
	}
}

func TestIndexReturnsCopies(t *testing.T) {
	docs := []retrieval.Doc{{ID: "a", Title: "Refunds", Text: "refund", Tags: []string{"x"}}}
	ix := retrieval.NewIndex(docs)
	docs[0].Title = "changed by caller"
	got, _ := ix.Retrieve(context.Background(), "refund", 1)
	got[0].Tags[0] = "mutated"
	again, _ := ix.Retrieve(context.Background(), "refund", 1)
	if again[0].Title != "Refunds" || again[0].Tags[0] != "x" {
		t.Errorf("index shares memory with callers: %+v", again[0])
	}
}

func TestIndexTitleBoost(t *testing.T) {
	docs := []retrieval.Doc{
		{ID: "body", Title: "Account help", Text: "You can also ask about the warranty here, and about other topics."},
		{ID: "title", Title: "Warranty", Text: "You can also ask about coverage here, and about other topics."},
	}
	got, _ := retrieval.NewIndex(docs).Retrieve(context.Background(), "warranty", 2)
	if len(got) != 2 || got[0].ID != "title" {
		t.Errorf("order = %v, want the title match first", ids(got))
	}
}
