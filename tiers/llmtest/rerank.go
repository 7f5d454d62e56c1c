package llmtest

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
)

// MaxRerankDocuments caps the documents of one rerank request.
const MaxRerankDocuments = 1000

type rerankRequest struct {
	Model           string            `json:"model"`
	Query           string            `json:"query"`
	Documents       []json.RawMessage `json:"documents"`
	TopN            *int              `json:"top_n"`
	ReturnDocuments bool              `json:"return_documents"`
}

// texts returns the documents of a rerank request: strings, or objects
// with a "text" field (the Jina form).
func (q rerankRequest) texts() ([]string, bool) {
	out := make([]string, len(q.Documents))
	for i, raw := range q.Documents {
		if json.Unmarshal(raw, &out[i]) == nil {
			continue
		}
		var obj struct {
			Text *string `json:"text"`
		}
		if json.Unmarshal(raw, &obj) != nil || obj.Text == nil {
			return nil, false
		}
		out[i] = *obj.Text
	}
	return out, true
}

type rerankResult struct {
	Index          int     `json:"index"`
	RelevanceScore float64 `json:"relevance_score"`
	Document       any     `json:"document,omitempty"`
}

// handleRerank serves POST /v1/rerank, the Jina/Cohere-compatible rerank
// API: the documents scored by the cosine similarity (0 when negative) of
// the feature-hashed vectors of query and document, best first (ties by
// index), the top_n best if top_n is set.
func (s *Server) handleRerank(w http.ResponseWriter, r *http.Request) {
	var req rerankRequest
	if !readJSON(w, r, &req) || !s.checkModel(w, req.Model) {
		return
	}
	texts, ok := req.texts()
	switch {
	case req.Query == "":
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "query must not be empty")
		return
	case !ok || len(texts) == 0 || len(texts) > MaxRerankDocuments:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value",
			"documents must be 1.."+strconv.Itoa(MaxRerankDocuments)+" strings or {\"text\"} objects")
		return
	case req.TopN != nil && *req.TopN < 1:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "top_n must be at least 1")
		return
	}
	f := s.countCall(req.Model, func(st *Stats) { st.RerankCalls++ })
	if s.common(w, r, f) {
		return
	}
	prompt := countTokens(req.Query)
	for _, t := range texts {
		prompt += countTokens(t)
	}
	if s.plainFault(w, r, f, req.Model, prompt, `{"results": [{"index": 0, "relevance_score": oops}]`) {
		return
	}
	results := []rerankResult{}
	if f.Mode != ModeEmpty {
		results = rerank(req, texts)
	}
	s.count(req.Model, func(st *Stats) { st.PromptTokens += int64(prompt) })
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      "rerank-" + strconv.FormatInt(s.nextID(), 10),
		"model":   req.Model,
		"results": results,
		"usage":   map[string]int{"total_tokens": prompt},
	})
}

// rerank scores texts against the query of req and returns the results
// best first, cut to req.TopN.
func rerank(req rerankRequest, texts []string) []rerankResult {
	q := embed(req.Query, defaultRerankDim)
	out := make([]rerankResult, len(texts))
	for i, t := range texts {
		out[i] = rerankResult{Index: i, RelevanceScore: max(0, cosine32(q, embed(t, defaultRerankDim)))}
		if req.ReturnDocuments {
			out[i].Document = map[string]string{"text": t}
		}
	}
	slices.SortStableFunc(out, func(a, b rerankResult) int { return cmp.Compare(b.RelevanceScore, a.RelevanceScore) })
	if req.TopN != nil && *req.TopN < len(out) {
		out = out[:*req.TopN]
	}
	return out
}

// defaultRerankDim is the length of the vectors rerank compares.
const defaultRerankDim = 1024

// cosine32 returns the cosine similarity of two unit vectors.
func cosine32(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot
}
