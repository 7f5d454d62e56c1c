package tiers

import (
	"context"

	"github.com/ragfuse/ragfuse/retrieval"
)

// Source names the tier kind that produced an answer. A frontend uses it to
// tell the user honestly how the answer was made.
type Source string

// The sources, in the order a question usually falls through them.
const (
	SourceCache      Source = "cache"       // a semantic-cache hit
	SourcePrimary    Source = "primary"     // the primary model tier
	SourceFallback   Source = "fallback"    // a fallback model tier
	SourceStaleCache Source = "stale_cache" // an expired cache entry, served because every model tier failed
	SourceRetrieval  Source = "retrieval"   // knowledge-base articles, no model
	SourceStatic     Source = "static"      // the configured static message
)

// Query is one question.
type Query struct {
	Tenant   string
	Session  string
	Question string
	// History holds the earlier turns of the question's conversation,
	// oldest first; empty for a lone question. The LLM tiers send the
	// latest of them with the question, the documents are retrieved for
	// the conversation, and the cache tiers neither serve nor store a
	// question that has them.
	History []Turn

	// Memo shares per-question work (retrieval, embedding) between the
	// tiers of one run. The pipeline sets it; nil means every tier does
	// its own work.
	Memo *Memo
	// Guard, if set, guards each model candidate call of an LLM tier (a
	// breaker per model, a cooldown after 429, the record of each
	// attempt). The pipeline sets it for each tier call; nil means an LLM
	// tier tries every candidate in order.
	Guard CandidateGuard
}

// Usage counts tokens of a model call, when known.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Total returns prompt plus completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.PromptTokens + v.PromptTokens, u.CompletionTokens + v.CompletionTokens}
}

// Answer is what a tier produced.
type Answer struct {
	Text   string
	Source Source
	Model  string          // the model that produced Text, if any
	Docs   []retrieval.Doc // documents used or shown
	Usage  Usage           // tokens of the call that produced Text
	// Interrupted is set on a streamed answer that ended before the model
	// finished; such an answer is never cached.
	Interrupted bool
}

// Tier is one step of the degradation chain. A tier that cannot answer
// returns an error (preferably an *Error with its Kind); it never returns a
// canned string pretending to be a real answer. Implementations must be safe
// for concurrent use.
type Tier interface {
	Name() string
	Source() Source
	Answer(ctx context.Context, q Query) (Answer, error)
}

// Rememberer is a Tier that learns from answers produced by other tiers
// (the semantic cache). The pipeline calls Remember with the final answer
// of each successful run; the tier decides whether to keep it.
type Rememberer interface {
	Remember(ctx context.Context, q Query, a Answer)
}
