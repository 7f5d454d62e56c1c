package tiers

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestDetectLanguage(t *testing.T) {
	for in, want := range map[string]string{"": "en", "How are you": "en", "退货政策是什么": "zh", "iPhone 保修": "zh", "こんにちは": "en"} {
		if got := DetectLanguage(in); got != want {
			t.Errorf("DetectLanguage(%q) = %q, want %q", in, got, want)
		}
	}
}

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

func TestStaticTier(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := NewStatic("", "")
	a, err := s.Answer(ctx, Query{Question: "服务好吗"})
	if err != nil || a.Text != DefaultStaticMessage["zh"] || a.Source != SourceStatic || s.Name() != "static" {
		t.Fatalf("a=%+v err=%v", a, err)
	}
	a, _ = s.Answer(ctx, Query{Question: "hello"})
	if a.Text != DefaultStaticMessage["en"] {
		t.Fatalf("en: %q", a.Text)
	}
	a, _ = NewStatic("s", "call us").Answer(ctx, Query{Question: "服务"})
	if a.Text != "call us" {
		t.Fatalf("configured: %q", a.Text)
	}
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Kind: KindServer, Tier: "primary", Model: "m", Status: 503, Err: errors.New("down")}
	if got := e.Error(); got != "tiers: primary (m): server_error (HTTP 503): down" {
		t.Fatalf("Error() = %q", got)
	}
}

// TestWriteOneLine guards the prompt's title formatting: white space runs
// become single spaces, ends are trimmed, like strings.Fields joined.
func TestWriteOneLine(t *testing.T) {
	for _, s := range []string{"", "  ", "a", " a ", "Returns\n policy", "a\t\tb  c\n", "退货\u3000政策", "x y"} {
		var b strings.Builder
		writeOneLine(&b, s)
		if want := strings.Join(strings.Fields(s), " "); b.String() != want {
			t.Errorf("writeOneLine(%q) = %q, want %q", s, b.String(), want)
		}
	}
}
