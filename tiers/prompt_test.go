package tiers

import (
	"context"
	"strings"
	"testing"

	"github.com/ragfuse/ragfuse/retrieval"
)

func TestDetectLanguage(t *testing.T) {
	for in, want := range map[string]string{"": "en", "How are you": "en", "退货政策是什么": "zh", "iPhone 保修": "zh", "こんにちは": "en"} {
		if got := DetectLanguage(in); got != want {
			t.Errorf("DetectLanguage(%q) = %q, want %q", in, got, want)
		}
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

// greedyRetriever returns all its documents, however many were asked for.
type greedyRetriever struct{ docs []retrieval.Doc }

func (g greedyRetriever) Retrieve(context.Context, string, int) ([]retrieval.Doc, error) {
	return g.docs, nil
}

// TestLLMPromptKeepsContextDocs guards LLMConfig.ContextDocs ("how many
// documents go into the prompt") when the tier runs without a Memo, which
// cuts the documents to k itself: a retriever that returns more than it was
// asked for does not grow the prompt or the answer's documents.
func TestLLMPromptKeepsContextDocs(t *testing.T) {
	srv, last := upstream(t, reply(200, okBody))
	l := NewLLM(LLMConfig{Retriever: greedyRetriever{testDocs}, ContextDocs: 2, Candidates: []Candidate{candidate("m", srv.URL)}})
	a, err := l.Answer(context.Background(), Query{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Docs) != 2 || strings.Contains(*last, "[3]") {
		t.Fatalf("%d documents in the answer; request:\n%s", len(a.Docs), *last)
	}
}
