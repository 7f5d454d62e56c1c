package llmtest

// Stats counts what one model served. A call counts whatever fault it
// met; prompt tokens count for calls that got a 200 response; completion
// tokens count answer tokens actually sent. A Stats is a snapshot, a
// plain value.
type Stats struct {
	Calls            int64 `json:"calls"`             // chat completion requests, plain and streamed
	StreamCalls      int64 `json:"stream_calls"`      // the streamed ones among Calls
	EmbeddingCalls   int64 `json:"embedding_calls"`   // embedding requests
	Faulted          int64 `json:"faulted"`           // calls that met a fault other than ok and latency
	PromptTokens     int64 `json:"prompt_tokens"`     // chat prompts and embedding inputs
	CompletionTokens int64 `json:"completion_tokens"` // answer tokens sent
	Chunks           int64 `json:"chunks"`            // stream content chunks sent
}

// Stats returns the counters of model.
func (s *Server) Stats(model string) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.stats[model]; st != nil {
		return *st
	}
	return Stats{}
}

// AllStats returns the counters of every model that was called.
func (s *Server) AllStats() map[string]Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Stats, len(s.stats))
	for m, st := range s.stats {
		out[m] = *st
	}
	return out
}

// ResetStats sets every counter to zero.
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.stats)
}

// count applies fn to the counters of model under the lock.
func (s *Server) count(model string, fn func(*Stats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats[model]
	if st == nil {
		st = &Stats{}
		s.stats[model] = st
	}
	fn(st)
}
