package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"
)

type rerankResponse struct {
	Model   string `json:"model"`
	Results []struct {
		Index          int               `json:"index"`
		RelevanceScore float64           `json:"relevance_score"`
		Document       map[string]string `json:"document"`
	} `json:"results"`
	Usage struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

// postRerank sends body to srv's /v1/rerank with its own transport and
// returns the response (body read) or the transport error.
func postRerank(t *testing.T, ctx context.Context, srv *Server, body string) (*http.Response, []byte, error) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/rerank", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestRerank(t *testing.T) {
	srv := start(t, Config{})
	body := `{"model": "rr", "query": "how do I return an item",
		"documents": ["Shipping to Canada takes a week", "How to return an item you bought", {"text": "return an item"}],
		"top_n": 2, "return_documents": true}`
	resp, b, err := postRerank(t, t.Context(), srv, body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %v, err %v: %s", resp, err, b)
	}
	var got rerankResponse
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Results) != 2 || got.Model != "rr" || got.Usage.TotalTokens == 0 {
		t.Fatalf("got %+v, want 2 results of model rr with usage", got)
	}
	first, second := got.Results[0], got.Results[1]
	if first.Index == 0 || second.Index == 0 || first.RelevanceScore < second.RelevanceScore ||
		first.RelevanceScore > 1 || second.RelevanceScore <= 0 {
		t.Errorf("results %+v: want the two return documents, best first, scores in (0, 1]", got.Results)
	}
	if first.Document["text"] == "" {
		t.Errorf("return_documents: result %+v has no document", first)
	}
	if st := srv.Stats("rr"); st.RerankCalls != 1 || st.PromptTokens == 0 {
		t.Errorf("stats %+v, want 1 rerank call with tokens", st)
	}
}

func TestRerankBadRequests(t *testing.T) {
	srv := start(t, Config{Models: []string{"rr"}})
	for _, tt := range []struct {
		name, body string
		status     int
	}{
		{"empty query", `{"model": "rr", "query": "", "documents": ["a"]}`, 400},
		{"no documents", `{"model": "rr", "query": "q", "documents": []}`, 400},
		{"a document that is a number", `{"model": "rr", "query": "q", "documents": [1]}`, 400},
		{"top_n 0", `{"model": "rr", "query": "q", "documents": ["a"], "top_n": 0}`, 400},
		{"not JSON", `{"model": "rr",`, 400},
		{"unknown model", `{"model": "other", "query": "q", "documents": ["a"]}`, 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, b, err := postRerank(t, t.Context(), srv, tt.body)
			if err != nil || resp.StatusCode != tt.status {
				t.Errorf("got %v, %v: %s; want %d", resp.Status, err, b, tt.status)
			}
		})
	}
	if st := srv.Stats("rr"); st.RerankCalls != 0 {
		t.Errorf("bad requests counted as calls: %+v", st)
	}
}

// TestRerankFaults runs every fault mode on /v1/rerank.
func TestRerankFaults(t *testing.T) {
	const body = `{"model": "rr", "query": "refund", "documents": ["refund policy", "shipping"]}`
	tests := map[Mode]struct {
		fault Fault
		check func(t *testing.T, resp *http.Response, b []byte, err error)
	}{
		ModeOK:      {Fault{}, wantResults(2)},
		ModeLatency: {Fault{Mode: ModeLatency, Delay: 20 * time.Millisecond}, wantResults(2)},
		ModeHang: {Fault{Mode: ModeHang}, func(t *testing.T, _ *http.Response, _ []byte, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want deadline exceeded", err)
			}
		}},
		ModeStatus: {Fault{Mode: ModeStatus, Status: 503}, wantStatus(503)},
		ModeRateLimit: {Fault{Mode: ModeRateLimit, RetryAfter: 2 * time.Second}, func(t *testing.T, resp *http.Response, b []byte, err error) {
			wantStatus(429)(t, resp, b, err)
			if resp != nil && resp.Header.Get("Retry-After") != "2" {
				t.Errorf("Retry-After %q, want 2", resp.Header.Get("Retry-After"))
			}
		}},
		ModeReset: {Fault{Mode: ModeReset}, func(t *testing.T, _ *http.Response, _ []byte, err error) {
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("got %v, want a connection reset", err)
			}
		}},
		ModeBreak: {Fault{Mode: ModeBreak}, func(t *testing.T, _ *http.Response, _ []byte, err error) {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("got %v, want the body cut (unexpected EOF)", err)
			}
		}},
		ModeStall: {Fault{Mode: ModeStall, Delay: 20 * time.Millisecond}, wantResults(2)},
		ModeMalformed: {Fault{Mode: ModeMalformed}, func(t *testing.T, resp *http.Response, b []byte, err error) {
			if err != nil || resp.StatusCode != 200 || json.Valid(b) {
				t.Errorf("got %v, %v, %s; want 200 with a body that is not JSON", resp, err, b)
			}
		}},
		ModeEmpty: {Fault{Mode: ModeEmpty}, wantResults(0)},
	}
	for _, mode := range Modes {
		tt, ok := tests[mode]
		if !ok {
			t.Errorf("mode %s has no case", mode)
			continue
		}
		t.Run(string(mode), func(t *testing.T) {
			srv := start(t, Config{})
			srv.SetFault("rr", tt.fault)
			ctx, cancel := context.WithTimeout(t.Context(), short)
			defer cancel()
			resp, b, err := postRerank(t, ctx, srv, body)
			tt.check(t, resp, b, err)
			if st := srv.Stats("rr"); st.RerankCalls != 1 {
				t.Errorf("stats %+v, want 1 rerank call", st)
			}
		})
	}
}

func wantResults(n int) func(t *testing.T, resp *http.Response, b []byte, err error) {
	return func(t *testing.T, resp *http.Response, b []byte, err error) {
		t.Helper()
		var got rerankResponse
		if err != nil || resp.StatusCode != 200 || json.Unmarshal(b, &got) != nil || len(got.Results) != n {
			t.Errorf("got %v, %v, %s; want 200 with %d results", resp, err, b, n)
		}
	}
}

func wantStatus(code int) func(t *testing.T, resp *http.Response, b []byte, err error) {
	return func(t *testing.T, resp *http.Response, b []byte, err error) {
		t.Helper()
		if err != nil || resp.StatusCode != code {
			t.Errorf("got %v, %v, %s; want %d", resp, err, b, code)
		}
	}
}
