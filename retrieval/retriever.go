package retrieval

import "context"

// Doc is one knowledge-base document, as stored and as returned by a
// Retriever. Score is set by the retriever that returned it (higher is more
// relevant) and is zero in a stored document.
type Doc struct {
	ID    string   `json:"id"`
	Title string   `json:"title"`
	Text  string   `json:"text,omitempty"`
	URL   string   `json:"url,omitempty"` // where the document lives, if anywhere
	Tags  []string `json:"tags,omitempty"`
	Score float64  `json:"score"`
}

// Retriever returns the k documents most relevant to query, best first.
// Implementations must be safe for concurrent use. A RAG application plugs
// its own vector database in by implementing it.
type Retriever interface {
	Retrieve(ctx context.Context, query string, k int) ([]Doc, error)
}

// VectorRetriever is a Retriever that can reuse an embedding of the query
// computed elsewhere (for example by the semantic cache), so a question is
// embedded at most once. vec may be nil, in which case it behaves like
// Retrieve, or NoVector, in which case it ranks without any embedding.
type VectorRetriever interface {
	Retriever
	RetrieveVector(ctx context.Context, query string, vec []float32, k int) ([]Doc, error)
}

// NoVector passed to RetrieveVector says the question's embedding is not
// to be had (the embedding service failed once already for this question):
// rank without it and do not try to embed the question again.
var NoVector = []float32{}

// isNoVector reports whether vec is NoVector (empty but not nil).
func isNoVector(vec []float32) bool { return vec != nil && len(vec) == 0 }
