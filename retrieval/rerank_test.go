package retrieval_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/ragfuse/ragfuse/retrieval"
)

// scoreReranker returns fixed scores, or err.
type scoreReranker struct {
	scores []retrieval.RerankScore
	err    error
	texts  []string
}

func (s *scoreReranker) Rerank(_ context.Context, _ string, docs []string) ([]retrieval.RerankScore, error) {
	s.texts = docs
	return s.scores, s.err
}

func TestRerankDocs(t *testing.T) {
	docs := []retrieval.Doc{{ID: "a", Title: "A", Text: "alpha"}, {ID: "b", Title: "B", Text: "beta"}, {ID: "c", Title: "C", Text: "gamma"}}
	ctx := context.Background()
	boom := errors.New("rerank service down")
	tests := []struct {
		name     string
		scores   []retrieval.RerankScore
		err      error
		minScore float64
		want     []string
		wantErr  error
	}{
		{"reorders by score", []retrieval.RerankScore{{0, 0.1}, {1, 0.9}, {2, 0.5}}, nil, 0, []string{"b", "c", "a"}, nil},
		{"min score drops", []retrieval.RerankScore{{0, 0.1}, {1, 0.9}, {2, 0.5}}, nil, 0.5, []string{"b", "c"}, nil},
		{"unscored documents drop", []retrieval.RerankScore{{2, 0.3}}, nil, 0, []string{"c"}, nil},
		{"ties keep the order", []retrieval.RerankScore{{2, 0.5}, {0, 0.5}}, nil, 0, []string{"a", "c"}, nil},
		{"no scores", nil, nil, 0, []string{}, nil},
		{"error as is", nil, boom, 0, nil, boom},
		{"index out of range", []retrieval.RerankScore{{3, 0.1}}, nil, 0, nil, retrieval.ErrBadRerank},
		{"index twice", []retrieval.RerankScore{{1, 0.1}, {1, 0.2}}, nil, 0, nil, retrieval.ErrBadRerank},
		{"NaN score", []retrieval.RerankScore{{1, math.NaN()}}, nil, 0, nil, retrieval.ErrBadRerank},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &scoreReranker{scores: tt.scores, err: tt.err}
			got, err := retrieval.RerankDocs(ctx, r, "q", docs, tt.minScore, 0)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && !slices.Equal(ids(got), tt.want)) {
				t.Errorf("got %v, %v; want %v, %v", ids(got), err, tt.want, tt.wantErr)
			}
			if len(r.texts) != 3 || r.texts[1] != "B\nbeta" {
				t.Errorf("sent %q, want each document's title and text", r.texts)
			}
		})
	}
	got, _ := retrieval.RerankDocs(ctx, &scoreReranker{scores: []retrieval.RerankScore{{0, 0.7}}}, "q", docs, 0, 0)
	if len(got) != 1 || got[0].Score != 0.7 || docs[0].Score != 0 {
		t.Errorf("got %+v; want the reranker's score on a copy", got)
	}
}
