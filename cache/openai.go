package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// ErrEmbeddingShape reports a response with the wrong number of vectors, an
// index out of range, or vectors of differing or zero dimension.
var ErrEmbeddingShape = errors.New("cache: embedding response has the wrong shape")

// ErrNoEmbeddings reports a response without any vector. It comes wrapped
// together with ErrEmbeddingShape, so either matches with errors.Is.
var ErrNoEmbeddings = errors.New("cache: embedding response has no vectors")

// errNoClient reports an OpenAIEmbedder without a client.
var errNoClient = errors.New("cache: OpenAIEmbedder has no client")

// OpenAIEmbedderConfig configures an OpenAIEmbedder. Zero fields take the
// defaults written beside them.
type OpenAIEmbedderConfig struct {
	Client     *openai.Client // required: any OpenAI-compatible endpoint
	Model      string         // the provider's embedding model; default "text-embedding-3-small"
	BatchSize  int            // texts per request; default 32
	Timeout    time.Duration  // per request; default 5s
	Dimensions int            // requested output dimension (models that support it); 0: the model's own
}

// OpenAIEmbedder embeds texts with an OpenAI-compatible embeddings endpoint
// through go-openai, in batches of BatchSize, each request under its own
// Timeout. Errors wrap go-openai's (*openai.APIError, *openai.RequestError)
// or the context's, so callers can classify them with errors.As and
// errors.Is. It has no breaker of its own: the pipeline guards it like any
// model call. An OpenAIEmbedder is safe for concurrent use.
type OpenAIEmbedder struct {
	cfg OpenAIEmbedderConfig
}

var _ Embedder = (*OpenAIEmbedder)(nil)

// NewOpenAIEmbedder returns an OpenAIEmbedder.
func NewOpenAIEmbedder(cfg OpenAIEmbedderConfig) *OpenAIEmbedder {
	if cfg.Model == "" {
		cfg.Model = string(openai.SmallEmbedding3)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 32
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	return &OpenAIEmbedder{cfg: cfg}
}

// Model returns the embedding model name.
func (e *OpenAIEmbedder) Model() string { return e.cfg.Model }

// Embed returns one vector per text, in order.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.cfg.Client == nil {
		return nil, errNoClient
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.BatchSize {
		batch := texts[start:min(start+e.cfg.BatchSize, len(texts))]
		vecs, err := e.embedBatch(ctx, batch)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && len(vecs[0]) != len(out[0]) {
			return nil, fmt.Errorf("%w: dimension %d after %d", ErrEmbeddingShape, len(vecs[0]), len(out[0]))
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *OpenAIEmbedder) embedBatch(ctx context.Context, batch []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	resp, err := e.cfg.Client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{
		Input:          batch,
		Model:          openai.EmbeddingModel(e.cfg.Model),
		EncodingFormat: openai.EmbeddingEncodingFormatFloat,
		Dimensions:     e.cfg.Dimensions,
	})
	if err != nil {
		return nil, fmt.Errorf("cache: embeddings (%s): %w", e.cfg.Model, err)
	}
	if len(resp.Data) == 0 {
		return nil, fmt.Errorf("%w: %w for %d texts", ErrEmbeddingShape, ErrNoEmbeddings, len(batch))
	}
	if len(resp.Data) != len(batch) {
		return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrEmbeddingShape, len(resp.Data), len(batch))
	}
	vecs := make([][]float32, len(batch))
	dim := len(resp.Data[0].Embedding)
	for i, d := range resp.Data {
		idx := d.Index
		if idx < 0 || idx >= len(batch) {
			return nil, fmt.Errorf("%w: index %d out of range for %d texts", ErrEmbeddingShape, d.Index, len(batch))
		}
		if vecs[idx] != nil {
			idx = i // some servers leave Index at zero
		}
		if vecs[idx] != nil {
			return nil, fmt.Errorf("%w: index %d repeated", ErrEmbeddingShape, d.Index)
		}
		if len(d.Embedding) == 0 || len(d.Embedding) != dim {
			return nil, fmt.Errorf("%w: vector %d has dimension %d", ErrEmbeddingShape, i, len(d.Embedding))
		}
		vecs[idx] = d.Embedding
	}
	for i, v := range vecs {
		if v == nil {
			return nil, fmt.Errorf("%w: no vector for text %d", ErrEmbeddingShape, i)
		}
	}
	return vecs, nil
}
