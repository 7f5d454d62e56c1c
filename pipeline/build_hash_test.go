package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
)

// TestHashEmbedderAddsNoUnrelatedArticles: with the hash embedder, a
// question the knowledge base does not cover gets no articles from the
// built retriever (hash vectors bring documents near only through shared
// words or bucket collisions), so it falls to the static tier, while
// covered questions still get theirs. kb-ood.jsonl holds the same bar as
// the keyword index's own test: at least 0.9 with no documents.
func TestHashEmbedderAddsNoUnrelatedArticles(t *testing.T) {
	cfg, err := ParseConfig([]byte(`knowledge_base: {path: ../testdata/kb}
tiers:
  - {name: cache, kind: semantic_cache, embedder: hash}
  - {name: retrieval, kind: retrieval, top_k: 3}
  - {name: static, kind: static}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(cfg, BuildEnv{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ask := func(q string) *Result {
		t.Helper()
		res, err := p.Ask(context.Background(), tiers.Query{Tenant: "t", Question: q})
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		return res
	}
	for _, q := range []string{"hello", "吉他", "Python 里怎么反转一个列表"} {
		if res := ask(q); res.Source != tiers.SourceStatic {
			t.Errorf("%q answered by %s with %v, want static", q, res.Source, docIDs(res.Docs))
		}
	}
	if res := ask("Can I change my delivery address?"); res.Source != tiers.SourceRetrieval ||
		len(res.Docs) == 0 || res.Docs[0].ID != "en-shipping-change-address" {
		t.Errorf("covered question: %s %v", res.Source, docIDs(res.Docs))
	}

	f, err := os.Open("../testdata/kb-ood.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total, none := 0, 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var c struct {
			Question string `json:"question"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil || c.Question == "" {
			continue
		}
		total++
		if res := ask(c.Question); len(res.Docs) == 0 {
			none++
		} else {
			t.Logf("leak: %q got %v", c.Question, docIDs(res.Docs))
		}
	}
	if total < 30 || float64(none) < 0.9*float64(total) {
		t.Errorf("%d of %d out-of-domain questions got no documents, want >= 0.9", none, total)
	}
}

func docIDs(docs []retrieval.Doc) []string {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids
}
