package cache

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// TestOpenAIEmbedderIndexOutOfRange: a response whose vector indexes lie
// outside the batch is reported as ErrEmbeddingShape, as documented, rather
// than mapped to texts by position.
func TestOpenAIEmbedderIndexOutOfRange(t *testing.T) {
	for _, body := range []string{
		`{"object":"list","data":[{"embedding":[0.1,0.2],"index":5},{"embedding":[0.3,0.4],"index":6}]}`,
		`{"object":"list","data":[{"embedding":[0.1,0.2],"index":-1},{"embedding":[0.3,0.4],"index":0}]}`,
	} {
		s := newEmbedServer(t)
		s.handler = func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		}
		got, err := NewOpenAIEmbedder(OpenAIEmbedderConfig{Client: s.client()}).Embed(context.Background(), []string{"a", "b"})
		if !errors.Is(err, ErrEmbeddingShape) {
			t.Errorf("response %s: Embed = %v, %v; want ErrEmbeddingShape", body, got, err)
		}
	}
}
