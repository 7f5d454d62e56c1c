package retrieval_test

import (
	"context"
	"fmt"

	"github.com/ragfuse/ragfuse"
	"github.com/ragfuse/ragfuse/retrieval"
)

// The demo knowledge base is embedded in the ragfuse package; a folder on
// disk opens the same way with retrieval.Open(path).
func Example() {
	kb, err := retrieval.OpenFS(ragfuse.KnowledgeBase, ragfuse.KnowledgeBaseDir)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, q := range []string{"如何取消发票", "How long until my refund arrives?"} {
		docs, err := kb.Retrieve(ctx, q, 1)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s -> %s (%s)\n", q, docs[0].ID, docs[0].Title)
	}
	fmt.Println("version", kb.Version())
	// Output:
	// 如何取消发票 -> zh-invoice-cancel (如何取消或作废发票)
	// How long until my refund arrives? -> en-refund-timeline (When will I get my refund?)
	// version 1
}

func ExampleNewIndex() {
	ix := retrieval.NewIndex([]retrieval.Doc{
		{ID: "returns", Title: "7-day returns", Text: "Return unused items within 7 days."},
		{ID: "invoices", Title: "发票", Text: "订单完成后 48 小时内开具电子发票。"},
	})
	docs, _ := ix.Retrieve(context.Background(), "电子发票什么时候开", 5)
	for _, d := range docs {
		fmt.Println(d.ID)
	}
	// Output: invoices
}

func ExampleBestPassage() {
	doc := retrieval.Doc{ID: "returns", Title: "Returns", Text: "You can return most items within 7 days.\n\n" +
		"Faulty items can be returned within 30 days; we pay the postage.\n\n" +
		"Refunds go back to the original payment method."}
	p := retrieval.BestPassage("who pays the postage for a faulty item?", doc, 280)
	fmt.Println(p.Text)
	// Output: Faulty items can be returned within 30 days; we pay the postage.
}
