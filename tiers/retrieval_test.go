package tiers

import (
	"context"
	"errors"
	"strings"
	"testing"
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
