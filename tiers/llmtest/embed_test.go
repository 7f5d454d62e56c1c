package llmtest

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s / norm(a) / norm(b)
}

func TestEmbeddings(t *testing.T) {
	srv := start(t, Config{EmbeddingDim: 64})
	c := client(t, srv)
	texts := []string{"How do I return an item?", "how do I return an item", "Shipping to Canada", "", "退货政策"}
	resp, err := c.CreateEmbeddings(t.Context(), openai.EmbeddingRequest{Model: "embed", Input: texts})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != len(texts) || resp.Usage.PromptTokens == 0 {
		t.Fatalf("%d vectors, usage %+v", len(resp.Data), resp.Usage)
	}
	for i, d := range resp.Data {
		if d.Index != i || len(d.Embedding) != 64 || math.Abs(norm(d.Embedding)-1) > 1e-5 {
			t.Errorf("vector %d: index %d, len %d, norm %v", i, d.Index, len(d.Embedding), norm(d.Embedding))
		}
	}
	if got := cosine(resp.Data[0].Embedding, resp.Data[1].Embedding); got < 0.999 {
		t.Errorf("same words, different case: cosine %v", got)
	}
	if got := cosine(resp.Data[0].Embedding, resp.Data[2].Embedding); got > 0.6 {
		t.Errorf("unrelated texts: cosine %v", got)
	}

	one, err := c.CreateEmbeddings(t.Context(), openai.EmbeddingRequest{Model: "embed", Input: texts[0],
		Dimensions: 16, EncodingFormat: openai.EmbeddingEncodingFormatBase64})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Data) != 1 || len(one.Data[0].Embedding) != 16 || math.Abs(norm(one.Data[0].Embedding)-1) > 1e-5 {
		t.Errorf("base64, 16 dims: %+v", one.Data)
	}
	again, err := c.CreateEmbeddings(t.Context(), openai.EmbeddingRequestTokens{Model: "embed", Input: [][]int{{1, 2}, {3}}})
	if err != nil || len(again.Data) != 2 {
		t.Errorf("token input: %+v, %v", again.Data, err)
	}
	if s := srv.Stats("embed"); s.EmbeddingCalls != 3 || s.Calls != 0 {
		t.Errorf("stats = %+v", s)
	}
}

func TestEmbeddingFaults(t *testing.T) {
	srv := start(t, Config{})
	c := client(t, srv)
	req := openai.EmbeddingRequest{Model: "embed", Input: "hi"}
	srv.SetFault("embed", Fault{Mode: ModeStatus, Status: 503})
	var e *openai.APIError
	if _, err := c.CreateEmbeddings(t.Context(), req); !errors.As(err, &e) || e.HTTPStatusCode != 503 {
		t.Errorf("status fault: %v", err)
	}
	srv.SetFault("embed", Fault{Mode: ModeEmpty})
	if resp, err := c.CreateEmbeddings(t.Context(), req); err != nil || len(resp.Data) != 0 {
		t.Errorf("empty fault: %+v, %v", resp.Data, err)
	}
	srv.SetFault("embed", Fault{Mode: ModeMalformed})
	if _, err := c.CreateEmbeddings(t.Context(), req); err == nil {
		t.Error("malformed fault: no error")
	}
}

func TestEmbeddingsBadInput(t *testing.T) {
	srv := start(t, Config{})
	for _, body := range []string{
		`{"model":"e"}`,
		`{"model":"e","input":[]}`,
		`{"model":"e","input":{"a":1}}`,
		`{"model":"e","input":"x","dimensions":-1}`,
		`{"model":"e","input":"x","dimensions":100000}`,
		`{"model":"e","input":"x","encoding_format":"hex"}`,
		`{"input":"x"}`,
		`not json`,
	} {
		if status, _, got := raw(t, http.MethodPost, srv.URL+"/embeddings", body); status != 400 {
			t.Errorf("%s: %d %s, want 400", body, status, got)
		}
	}
}

// TestEmbeddingsNullInputAndLargeDefaultDim: "input": null is refused as
// no input, and a server whose EmbeddingDim is over MaxEmbeddingDim serves
// MaxEmbeddingDim-long vectors rather than refusing every request.
func TestEmbeddingsNullInputAndLargeDefaultDim(t *testing.T) {
	srv := start(t, Config{EmbeddingDim: 4})
	if status, _, body := raw(t, http.MethodPost, srv.URL+"/embeddings", `{"model":"e","input":null}`); status != http.StatusBadRequest || !strings.Contains(body, "invalid_input") {
		t.Errorf("input null: %d %s, want 400 invalid_input", status, body)
	}
	big := start(t, Config{EmbeddingDim: MaxEmbeddingDim + 1})
	status, _, body := raw(t, http.MethodPost, big.URL+"/embeddings", `{"model":"e","input":"hello"}`)
	var resp struct {
		Data []struct{ Embedding []float32 } `json:"data"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &resp) != nil || len(resp.Data) != 1 || len(resp.Data[0].Embedding) != MaxEmbeddingDim {
		t.Errorf("EmbeddingDim %d: %d, want 200 with %d-long vectors", MaxEmbeddingDim+1, status, MaxEmbeddingDim)
	}
}
