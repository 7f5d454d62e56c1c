package tiers

import (
	"context"
	"testing"
)

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
