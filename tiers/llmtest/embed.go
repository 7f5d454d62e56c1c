package llmtest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// MaxEmbeddingDim caps the length of embedding vectors, asked for by a
// request or set by Config.EmbeddingDim.
const MaxEmbeddingDim = 8192

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`
}

// inputs returns the texts of an embedding input: a string, an array of
// strings, or token arrays (each token becomes a word).
func (e embeddingRequest) inputs() ([]string, bool) {
	if len(e.Input) == 0 || string(e.Input) == "null" {
		return nil, false
	}
	var one string
	if json.Unmarshal(e.Input, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(e.Input, &many) == nil && len(many) > 0 {
		return many, true
	}
	var tokens []int
	if json.Unmarshal(e.Input, &tokens) == nil && len(tokens) > 0 {
		return []string{tokenText(tokens)}, true
	}
	var lists [][]int
	if json.Unmarshal(e.Input, &lists) == nil && len(lists) > 0 {
		out := make([]string, len(lists))
		for i, l := range lists {
			out[i] = tokenText(l)
		}
		return out, true
	}
	return nil, false
}

func tokenText(tokens []int) string {
	words := make([]string, len(tokens))
	for i, t := range tokens {
		words[i] = "t" + strconv.Itoa(t)
	}
	return strings.Join(words, " ")
}

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string
}

// handleEmbeddings serves POST /v1/embeddings.
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingRequest
	if !readJSON(w, r, &req) || !s.checkModel(w, req.Model) {
		return
	}
	texts, ok := req.inputs()
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_input",
			"input must be a string, an array of strings or token arrays")
		return
	}
	dim := s.opts.EmbeddingDim
	if req.Dimensions != 0 {
		dim = req.Dimensions
	}
	if req.Dimensions != 0 && (dim < 1 || dim > MaxEmbeddingDim) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value",
			fmt.Sprintf("dimensions must be in 1..%d", MaxEmbeddingDim))
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "encoding_format must be float or base64")
		return
	}
	f := s.countCall(req.Model, func(st *Stats) { st.EmbeddingCalls++ })
	if s.common(w, r, f) {
		return
	}
	prompt := 0
	for _, t := range texts {
		prompt += countTokens(t)
	}
	if s.plainFault(w, r, f, req.Model, prompt, `{"object": "list", "data": [{"embedding": [0.1, oops]}]`) {
		return
	}
	data := []embeddingData{}
	if f.Mode != ModeEmpty {
		for i, t := range texts {
			v := embed(t, dim)
			d := embeddingData{Object: "embedding", Index: i, Embedding: v}
			if req.EncodingFormat == "base64" {
				d.Embedding = encodeBase64(v)
			}
			data = append(data, d)
		}
	}
	s.count(req.Model, func(st *Stats) { st.PromptTokens += int64(prompt) })
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   data,
		"model":  req.Model,
		"usage":  map[string]int{"prompt_tokens": prompt, "total_tokens": prompt},
	})
}

// encodeBase64 writes v as little-endian float32s in base64, the OpenAI
// "base64" encoding format.
func encodeBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

type modelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// modelNames returns Config.Models, or else every model that has a fault,
// a schedule or counters, sorted.
func (s *Server) modelNames() []string {
	if len(s.opts.Models) > 0 {
		return slices.Clone(s.opts.Models)
	}
	s.mu.Lock()
	var names []string
	for k := range s.faults {
		names = append(names, k)
	}
	for k := range s.schedules {
		names = append(names, k)
	}
	for k := range s.stats {
		names = append(names, k)
	}
	s.mu.Unlock()
	slices.Sort(names)
	names = slices.Compact(names)
	return slices.DeleteFunc(names, func(n string) bool { return n == AnyModel })
}

// handleModels serves GET /v1/models.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	data := []modelInfo{}
	for _, m := range s.modelNames() {
		data = append(data, modelInfo{ID: m, Object: "model", OwnedBy: "llmtest"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// handleModel serves GET /v1/models/{model}.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	m := r.PathValue("model")
	if !s.checkModel(w, m) {
		return
	}
	writeJSON(w, http.StatusOK, modelInfo{ID: m, Object: "model", OwnedBy: "llmtest"})
}
