package pipeline

import (
	"context"
	"net/http"
	"testing"

	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// TestBuildStoreFromEmpty: a semantic_cache with store_from: [] writes no
// answer back, while one without store_from writes the primary's (the
// default [primary]).
func TestBuildStoreFromEmpty(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	for _, tc := range []struct {
		storeFrom string
		want      tiers.Source
	}{
		{"", tiers.SourceCache},
		{", store_from: []", tiers.SourcePrimary},
	} {
		cfg, err := ParseConfig([]byte(`models: {m: {base_url: "` + srv.URL + `"}}
tiers:
  - {kind: semantic_cache` + tc.storeFrom + `}
  - {kind: llm, models: [m], context_docs: 1}
  - {kind: static}
`))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Build(cfg, BuildEnv{HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		q := tiers.Query{Tenant: "acme", Question: "How do I return an item?"}
		var res *Result
		for range 2 {
			if res, err = p.Ask(context.Background(), q); err != nil {
				t.Fatal(err)
			}
		}
		if res.Source != tc.want {
			t.Errorf("semantic_cache{%s}: second answer from %s, want %s", tc.storeFrom, res.Source, tc.want)
		}
		_ = p.Close()
	}
}
