package tiers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ragfuse/ragfuse/retrieval"
)

// RerankTier names rerank calls in errors and attempts.
const RerankTier = "rerank"

// maxRerankBody caps a rerank response body.
const maxRerankBody = 4 << 20

// errNoRerankResults reports a rerank response without results.
var errNoRerankResults = errors.New("rerank response has no results")

// RerankClientConfig configures a RerankClient.
type RerankClientConfig struct {
	// BaseURL is the model service's base URL, such as
	// "https://api.example.com/v1"; requests go to BaseURL + "/rerank".
	BaseURL string
	APIKey  string // sent as a bearer token; empty sends none
	Model   string // the model name sent in each request
	ID      string // the models: entry, named in errors; default Model
	// HTTPClient sends the requests; nil means a new http.Client. Its
	// Timeout should be zero: calls are bounded by their context.
	HTTPClient *http.Client
}

// RerankClient calls the Jina/Cohere-compatible rerank API that vLLM,
// TEI-compatible servers, Jina, Xinference and others serve: POST
// {base_url}/rerank {"model", "query", "documents", "top_n"} ->
// {"results": [{"index", "relevance_score"}]}. It implements
// retrieval.Reranker. Its errors are *Error of tier "rerank" with the
// Kinds of a chat call: timeout, connection, server_error, auth,
// rate_limited (with the 429's Retry-After), malformed, and empty for a
// response without results. A one-document Rerank is the smallest call
// that shows the model is up. A RerankClient is safe for concurrent use.
type RerankClient struct {
	url, key, model, id string
	hc                  *http.Client
}

var _ retrieval.Reranker = (*RerankClient)(nil)

// NewRerankClient returns a client for cfg.
func NewRerankClient(cfg RerankClientConfig) *RerankClient {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	id := cfg.ID
	if id == "" {
		id = cfg.Model
	}
	return &RerankClient{url: strings.TrimRight(cfg.BaseURL, "/") + "/rerank", key: cfg.APIKey, model: cfg.Model, id: id, hc: hc}
}

type rerankRequest struct {
	Model     string   `json:"model"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n"`
}

// Rerank scores docs for query; see retrieval.Reranker.
func (c *RerankClient) Rerank(ctx context.Context, query string, docs []string) ([]retrieval.RerankScore, error) {
	body, err := json.Marshal(rerankRequest{Model: c.model, Query: query, Documents: docs, TopN: len(docs)})
	if err != nil {
		return nil, &Error{Kind: KindOther, Tier: RerankTier, Model: c.id, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Kind: KindOther, Tier: RerankTier, Model: c.id, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, classifyCall(RerankTier, c.id, err, ctx.Err(), 0)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRerankBody))
	if err != nil {
		return nil, classifyCall(RerankTier, c.id, err, ctx.Err(), 0)
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{Kind: kindOfStatus(resp.StatusCode, bodyErrorCodes(b)), Tier: RerankTier, Model: c.id,
			Status: resp.StatusCode, Err: errors.New(http.StatusText(resp.StatusCode))}
		if e.Kind == KindRateLimited {
			e.RetryAfter = parseRetryAfter(resp.Header)
		}
		return nil, e
	}
	var out struct {
		Results []retrieval.RerankScore `json:"results"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, classifyCall(RerankTier, c.id, err, ctx.Err(), 0)
	}
	if len(out.Results) == 0 {
		return nil, &Error{Kind: KindEmpty, Tier: RerankTier, Model: c.id, Err: errNoRerankResults}
	}
	return out.Results, nil
}

// Defaults of Rerank.
const (
	DefaultRerankCandidates = 20
	DefaultRerankTimeout    = 800 * time.Millisecond
)

// Rerank reorders the documents of a question once, for every tier of the
// run (the pipeline sets Apply as Memo.Rerank). Zero fields take the
// defaults written beside them.
type Rerank struct {
	Reranker retrieval.Reranker
	// Model is the rerank model as the guard sees it: its ID (the breaker
	// "model/<ID>", the attempt's model) and Cooldown after a 429.
	Model      Candidate
	Candidates int           // documents retrieved and reranked; default DefaultRerankCandidates
	Timeout    time.Duration // bound of the rerank call; default DefaultRerankTimeout
	MinScore   float64       // documents the reranker scores below it are dropped
}

// Apply returns docs reranked for question through guard, if not nil (an
// Acquire of tier "rerank"), best first with the reranker's scores and
// without those below MinScore; or docs as they are (the retriever's
// order, the no-op rerank) when the call fails, times out, or the guard
// skips it.
func (rr *Rerank) Apply(ctx context.Context, guard CandidateGuard, question string, docs []retrieval.Doc) []retrieval.Doc {
	timeout := rr.Timeout
	if timeout <= 0 {
		timeout = DefaultRerankTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out []retrieval.Doc
	err := GuardCall(ctx, guard, RerankTier, rr.Model, func(ctx context.Context) error {
		var err error
		out, err = retrieval.RerankDocs(ctx, rr.Reranker, question, docs, rr.MinScore, 0)
		var te *Error
		switch {
		case err == nil || errors.As(err, &te):
			return err
		case errors.Is(err, retrieval.ErrBadRerank):
			return &Error{Kind: KindMalformed, Tier: RerankTier, Model: rr.Model.ID, Err: err}
		}
		return classifyCall(RerankTier, rr.Model.ID, err, ctx.Err(), 0)
	})
	if err != nil {
		return docs
	}
	return out
}

// GuardCall makes call, an auxiliary model call of a question (a rerank,
// an embedding), through guard as model candidate c of step tier: a call
// the guard refuses fails at once with an *Error of KindUnavailable
// wrapping ErrUnavailable, and the guard hears the outcome of every call
// it lets through, a failure if call panics (call's error should be an
// *Error, as classified for a chat call). With a nil guard, call is made
// unguarded.
func GuardCall(ctx context.Context, guard CandidateGuard, tier string, c Candidate, call func(context.Context) error) error {
	if guard == nil {
		return call(ctx)
	}
	ctx, release, ok := guard.Acquire(ctx, tier, c)
	if !ok {
		return &Error{Kind: KindUnavailable, Tier: tier, Model: c.ID, Err: ErrUnavailable}
	}
	done := false
	defer func() {
		if !done { // call panicked: the guard hears a failure, the panic goes on
			release(&Error{Kind: KindOther, Tier: tier, Model: c.ID, Err: errCallPanicked}, Usage{})
		}
	}()
	err := call(ctx)
	done = true
	release(err, Usage{})
	return err
}

// errCallPanicked reports a guarded call that panicked.
var errCallPanicked = errors.New("guarded call panicked")
