package cache

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// embedServer is an OpenAI-compatible embeddings endpoint that embeds with
// the HashEmbedder and returns the vectors in reverse order (with indexes).
type embedServer struct {
	*httptest.Server
	requests atomic.Int32
	mu       sync.Mutex
	sizes    []int
	models   []string
	handler  http.HandlerFunc // overrides the default behaviour when set
}

func newEmbedServer(t *testing.T) *embedServer {
	s := &embedServer{}
	h := NewHashEmbedder(8)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if s.handler != nil {
			s.handler(w, r)
			return
		}
		var req struct {
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/embeddings" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.sizes = append(s.sizes, len(req.Input))
		s.models = append(s.models, req.Model)
		s.mu.Unlock()
		vecs, _ := h.Embed(r.Context(), req.Input)
		resp := openai.EmbeddingResponse{Object: "list", Model: openai.EmbeddingModel(req.Model)}
		for i := len(vecs) - 1; i >= 0; i-- {
			resp.Data = append(resp.Data, openai.Embedding{Object: "embedding", Embedding: vecs[i], Index: i})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *embedServer) client() *openai.Client {
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = s.URL + "/v1"
	return openai.NewClientWithConfig(cfg)
}

func TestOpenAIEmbedderBatches(t *testing.T) {
	s := newEmbedServer(t)
	e := NewOpenAIEmbedder(OpenAIEmbedderConfig{Client: s.client(), Model: "embed-m", BatchSize: 2})
	texts := []string{"return an item", "如何开发票", "track my parcel", "reset password", "会员积分"}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(got), len(texts))
	}
	h := NewHashEmbedder(8)
	for i, text := range texts {
		if cosine(got[i], embed1(t, h, text)) < 0.9999 {
			t.Errorf("vector %d is not the embedding of %q: order lost", i, text)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if want := []int{2, 2, 1}; len(s.sizes) != 3 || s.sizes[0] != want[0] || s.sizes[2] != want[2] {
		t.Errorf("batch sizes %v, want %v", s.sizes, want)
	}
	if s.models[0] != "embed-m" {
		t.Errorf("model %q, want embed-m", s.models[0])
	}
}

func TestOpenAIEmbedderErrors(t *testing.T) {
	t.Run("status", func(t *testing.T) {
		s := newEmbedServer(t)
		s.handler = func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
		}
		_, err := NewOpenAIEmbedder(OpenAIEmbedderConfig{Client: s.client()}).Embed(context.Background(), []string{"x"})
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusServiceUnavailable {
			t.Errorf("err = %v, want an *openai.APIError with status 503", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		s := newEmbedServer(t)
		release := make(chan struct{})
		s.handler = func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
		defer close(release)
		e := NewOpenAIEmbedder(OpenAIEmbedderConfig{Client: s.client(), Timeout: 50 * time.Millisecond})
		_, err := e.Embed(context.Background(), []string{"x"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want one wrapping context.DeadlineExceeded", err)
		}
	})
	t.Run("shape", func(t *testing.T) {
		s := newEmbedServer(t)
		s.handler = func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[{"embedding":[0.1,0.2],"index":0}]}`))
		}
		_, err := NewOpenAIEmbedder(OpenAIEmbedderConfig{Client: s.client()}).Embed(context.Background(), []string{"a", "b"})
		if !errors.Is(err, ErrEmbeddingShape) {
			t.Errorf("err = %v, want ErrEmbeddingShape", err)
		}
	})
	t.Run("no client", func(t *testing.T) {
		if _, err := NewOpenAIEmbedder(OpenAIEmbedderConfig{}).Embed(context.Background(), []string{"a"}); err == nil {
			t.Error("Embed without a client succeeded")
		}
	})
}

func TestOpenAIEmbedderDefaults(t *testing.T) {
	e := NewOpenAIEmbedder(OpenAIEmbedderConfig{})
	if e.cfg.BatchSize != 32 || e.cfg.Timeout != 5*time.Second || e.Model() != "text-embedding-3-small" {
		t.Errorf("defaults = %+v", e.cfg)
	}
}
