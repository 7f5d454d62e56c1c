package tiers

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ragfuse/ragfuse/retrieval"
)

func TestRetrievalTier(t *testing.T) {
	ret := &fakeRetriever{docs: testDocs}
	r := NewRetrieval(RetrievalConfig{Retriever: ret, TopK: 2})
	a, err := r.Answer(context.Background(), Query{Question: "return?"})
	if err != nil {
		t.Fatal(err)
	}
	want := "Here is what our knowledge base says about your question:\n\n1. Returns policy\nItems can be returned within 30 days.\n\n2. Shipping times\nOrders ship in 2 days."
	if a.Text != want || a.Source != SourceRetrieval || len(a.Docs) != 2 || a.Model != "" {
		t.Fatalf("answer = %+v", a)
	}
	a, _ = r.Answer(context.Background(), Query{Question: "怎么退货"})
	if !strings.HasPrefix(a.Text, "以下是知识库中与您的问题最相关的内容：") {
		t.Fatalf("zh intro: %q", a.Text)
	}
	r = NewRetrieval(RetrievalConfig{Retriever: ret, Intro: map[string]string{"en": "KB:"}})
	a, _ = r.Answer(context.Background(), Query{Question: "x"})
	if !strings.HasPrefix(a.Text, "KB:\n\n1. ") || len(a.Docs) != 3 || r.Name() != "retrieval" {
		t.Fatalf("custom intro: %q", a.Text)
	}
}

func TestRetrievalTierErrors(t *testing.T) {
	_, err := NewRetrieval(RetrievalConfig{Retriever: &fakeRetriever{}}).Answer(context.Background(), Query{Question: "x"})
	if KindOf(err) != KindNoDocs {
		t.Fatalf("no docs: %v", err)
	}
	_, err = NewRetrieval(RetrievalConfig{Retriever: &fakeRetriever{err: errors.New("disk")}}).Answer(context.Background(), Query{Question: "x"})
	if KindOf(err) != KindOther {
		t.Fatalf("failing retriever: %v", err)
	}
	_, err = NewRetrieval(RetrievalConfig{}).Answer(context.Background(), Query{Question: "x"})
	if KindOf(err) != KindOther {
		t.Fatalf("nil retriever: %v", err)
	}
}

func TestRetrievalOnceThroughMemo(t *testing.T) {
	ret := &fakeRetriever{docs: testDocs}
	m := &Memo{K: 3}
	q := Query{Question: "x", Memo: m}
	r := NewRetrieval(RetrievalConfig{Retriever: ret, TopK: 2})
	for range 3 {
		if _, err := r.Answer(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	if ret.calls != 1 {
		t.Fatalf("retriever called %d times, want 1", ret.calls)
	}
}

// TestRetrievalTierQuotesThePassage: each document is shown by the
// passage that answers the question, not by its opening.
func TestRetrievalTierQuotesThePassage(t *testing.T) {
	doc := retrieval.Doc{ID: "returns", Title: "Returns", URL: "https://help.example/returns",
		Text: "You can return most items within 7 days of delivery.\n\n" +
			"Faulty items can be returned within 30 days; we pay the return postage.\n\n" +
			"Refunds go back to the original payment method."}
	r := NewRetrieval(RetrievalConfig{Retriever: &fakeRetriever{docs: []retrieval.Doc{doc}}, TopK: 1})
	a, err := r.Answer(context.Background(), Query{Question: "who pays the postage for a faulty item?"})
	if err != nil {
		t.Fatal(err)
	}
	want := "1. Returns\n…Faulty items can be returned within 30 days; we pay the return postage.\nhttps://help.example/returns"
	if !strings.HasSuffix(a.Text, want) {
		t.Errorf("answer %q, want it to end with %q", a.Text, want)
	}
	if a.Docs[0].Text != doc.Text {
		t.Errorf("the answer's document lost its text: %q", a.Docs[0].Text)
	}
	a, _ = r.Answer(context.Background(), Query{Question: "can I send an item back within 7 days of delivery"})
	if !strings.Contains(a.Text, "1. Returns\nYou can return most items") {
		t.Errorf("the opening answers best, got %q", a.Text)
	}
}
