package llmtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// benchServe drives the handler in process, without a network.
func benchServe(b *testing.B, srv *Server, path, body string) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

const benchChat = `{"model":"m","messages":[{"role":"system","content":"Documents:\n[1] Returns policy\nItems can be returned within 30 days."},{"role":"user","content":"How do I return an item?"}]`

func BenchmarkChatPlain(b *testing.B) {
	srv := New(Config{})
	defer srv.Close()
	benchServe(b, srv, "/v1/chat/completions", benchChat+`}`)
}

func BenchmarkChatStream(b *testing.B) {
	srv := New(Config{})
	defer srv.Close()
	benchServe(b, srv, "/v1/chat/completions", benchChat+`,"stream":true,"stream_options":{"include_usage":true}}`)
}

func BenchmarkEmbeddings(b *testing.B) {
	srv := New(Config{})
	defer srv.Close()
	benchServe(b, srv, "/v1/embeddings", `{"model":"e","input":["How do I return an item?","Shipping to Canada takes five days"]}`)
}
