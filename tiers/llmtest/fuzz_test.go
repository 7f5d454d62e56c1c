package llmtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func FuzzAnswerText(f *testing.F) {
	for _, s := range []string{"", "Documents:", "Documents:\n[1] ", "参考资料：\n1) 标题：退货", "Question:", "TİTLE: x", "\xff\xfe", "Context:\n\n\n"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, system, user string) {
		got := answerText("m", user, []string{system, user})
		if !strings.HasPrefix(got, "[m] ") {
			t.Errorf("answer %q does not name the model", got)
		}
		if strings.Join(pieces(got), "") != got {
			t.Errorf("pieces do not join back for %q", got)
		}
		v := embed(user, 8)
		if len(v) != 8 {
			t.Errorf("embedding length %d", len(v))
		}
	})
}

// FuzzHandlers guards against panics on arbitrary request bodies.
func FuzzHandlers(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","stream":true,"max_tokens":-3,"messages":[{"role":"user","content":[{"type":"text"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":null}],"stream_options":null}`,
		`{"model":"m","input":[[1,2],[3]],"dimensions":1}`,
		`{"mode":"break","after":-1}`,
		`{"steps":[{"at":"1s","mode":"status","status":503}]}`,
		`null`, `[]`, `{`,
	} {
		f.Add(s)
	}
	srv := New(Config{})
	defer srv.Close()
	paths := []struct{ method, path string }{
		{http.MethodPost, "/v1/chat/completions"},
		{http.MethodPost, "/v1/embeddings"},
		{http.MethodPut, "/_llmtest/faults/x"},
		{http.MethodPut, "/_llmtest/schedule/x"},
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, p := range paths {
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest(p.method, p.path, strings.NewReader(body)))
			if rec.Code >= 500 {
				t.Errorf("%s %s %q: status %d", p.method, p.path, body, rec.Code)
			}
		}
		srv.ClearFaults()
	})
}
