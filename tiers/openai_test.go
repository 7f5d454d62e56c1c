package tiers

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// An error body go-openai cannot fully decode as an APIError (here: no
// "message") still carries the HTTP status: a 429 must be rate_limited with
// its Retry-After, not "other" (a breaker failure with no cooldown).
func TestLLMErrorBodyWithoutMessageKeepsStatus(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		kind   Kind
		retry  time.Duration
	}{
		{"429", 429, `{"error":{"type":"requests","code":"rate_limit_exceeded"}}`, KindRateLimited, 3 * time.Second},
		{"503", 503, `{"error":{"type":"server_error"}}`, KindServer, 0},
		{"400 filter", 400, `{"error":{"code":"content_filter","param":1}}`, KindContentFilter, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := upstream(t, reply(tt.status, tt.body, "Retry-After", "3"))
			l := NewLLM(LLMConfig{Name: "primary", Candidates: []Candidate{candidate("m1", srv.URL)}})
			_, err := l.Answer(context.Background(), Query{Question: "hi"})
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if te.Kind != tt.kind || te.Status != tt.status || te.RetryAfter != tt.retry {
				t.Fatalf("got kind=%s status=%d retry=%v, want %s %d %v (%v)",
					te.Kind, te.Status, te.RetryAfter, tt.kind, tt.status, tt.retry, err)
			}
		})
	}
}

// A candidate whose model go-openai treats as a reasoning model (o1/o3/o4,
// gpt-5…) with MaxTokens set (the pipeline's default is 512) must still
// reach the model: go-openai refuses max_tokens for such models, so the cap
// goes as max_completion_tokens.
func TestLLMReasoningModelWithMaxTokens(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{})
	defer srv.Close()
	for _, model := range []string{"gpt-5-mini", "o4-mini"} {
		c := Candidate{ID: model, MaxTokens: 3, Client: NewClient(ClientConfig{BaseURL: srv.URL})}
		l := NewLLM(LLMConfig{Candidates: []Candidate{c}})
		a, err := l.Answer(context.Background(), Query{Question: "how do returns work"})
		if err != nil {
			t.Fatalf("%s: Answer: %v", model, err)
		}
		if a.Usage.CompletionTokens != 3 {
			t.Fatalf("%s: completion tokens = %d, want the cap 3", model, a.Usage.CompletionTokens)
		}
		a, err = l.AnswerStream(context.Background(), Query{Question: "how do returns work"}, StreamRequest{})
		if err != nil {
			t.Fatalf("%s: AnswerStream: %v", model, err)
		}
		if a.Usage.CompletionTokens != 3 {
			t.Fatalf("%s: stream completion tokens = %d, want the cap 3", model, a.Usage.CompletionTokens)
		}
		if st := srv.Stats(model); st.Calls != 2 {
			t.Fatalf("%s: calls = %d, want 2", model, st.Calls)
		}
	}
}

// A Retry-After given as an HTTP date on a response without a Date header
// is relative to the time the response was received (RFC 9110 §6.6.1),
// not ignored; garbage such as "NaN" gives no wait at all, not a negative
// one.
func TestParseRetryAfterEdges(t *testing.T) {
	h := http.Header{}
	h.Set("Retry-After", time.Now().Add(30*time.Second).UTC().Format(http.TimeFormat))
	if d := parseRetryAfter(h); d < 25*time.Second || d > 31*time.Second {
		t.Fatalf("date without Date header: %v, want about 30s", d)
	}
	for _, v := range []string{"NaN", "-NaN", "Inf", "-3"} {
		h := http.Header{"Retry-After": {v}}
		if d := parseRetryAfter(h); d != 0 {
			t.Fatalf("Retry-After %q: %v, want 0", v, d)
		}
	}
}

// A Retry-After longer than maxRetryAfter, in seconds or as a date, cools
// the model down for maxRetryAfter, not for the short default cooldown.
func TestParseRetryAfterCapped(t *testing.T) {
	for _, v := range []string{"90000", "172800", "1e12"} {
		if d := parseRetryAfter(http.Header{"Retry-After": {v}}); d != maxRetryAfter {
			t.Errorf("Retry-After %q: %v, want %v", v, d, maxRetryAfter)
		}
	}
	h := http.Header{"Date": {time.Now().UTC().Format(http.TimeFormat)},
		"Retry-After": {time.Now().Add(48 * time.Hour).UTC().Format(http.TimeFormat)}}
	if d := parseRetryAfter(h); d != maxRetryAfter {
		t.Errorf("Retry-After 48h ahead: %v, want %v", d, maxRetryAfter)
	}
	if d := parseRetryAfter(http.Header{"Retry-After": {"7200"}}); d != 2*time.Hour {
		t.Errorf("Retry-After 7200: %v, want 2h", d)
	}
}
