package cache

import "context"

// Embedder turns texts into vectors, one per text, in order. Vectors of one
// Embedder have one dimension. Implementations must be safe for concurrent
// use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
