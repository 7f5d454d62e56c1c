package api

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragfuse/ragfuse/config"
)

var testLimits = limits{maxBody: 1 << 10, maxQuestion: 64}

func TestDecodeAsk(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		code   string // "" means success
		status int
	}{
		{"ok", `{"question":"How do I return an item?"}`, "", 0},
		{"all fields", `{"tenant_id":"acme","session_id":"s-1","question":"hi"}`, "", 0},
		{"empty body", ``, CodeBadJSON, 400},
		{"not an object", `["question"]`, CodeBadJSON, 400},
		{"syntax error", `{"question":`, CodeBadJSON, 400},
		{"wrong type", `{"question":42}`, CodeBadJSON, 400},
		{"two objects", `{"question":"a"}{"question":"b"}`, CodeBadJSON, 400},
		{"trailing garbage", `{"question":"a"} x`, CodeBadJSON, 400},
		{"unknown field", `{"tenant":"acme","question":"a"}`, CodeUnknownField, 400},
		{"missing question", `{"tenant_id":"acme"}`, CodeEmptyQuestion, 400},
		{"blank question", `{"question":" \n\t "}`, CodeEmptyQuestion, 400},
		{"null question", `{"question":null}`, CodeEmptyQuestion, 400},
		{"zero-width question", `{"question":"\u200b\u200b"}`, CodeEmptyQuestion, 400},
		{"format characters and space", `{"question":" \u200d\ufeff\u2060\u00ad\t\u200b "}`, CodeEmptyQuestion, 400},
		{"zero-width inside words", `{"question":"re\u200bturn"}`, "", 0},
		{"question too long", `{"question":"` + strings.Repeat("a", 65) + `"}`, CodeQuestionTooLong, 413},
		{"question at the limit", `{"question":"` + strings.Repeat("a", 64) + `"}`, "", 0},
		{"invalid utf8", "{\"question\":\"\xff\xfe\"}", CodeInvalidUTF8, 400},
		{"bad tenant", `{"tenant_id":"a b","question":"q"}`, CodeInvalidTenant, 400},
		{"long tenant", `{"tenant_id":"` + strings.Repeat("t", 65) + `","question":"q"}`, CodeInvalidTenant, 400},
		{"long session", `{"session_id":"` + strings.Repeat("s", 129) + `","question":"q"}`, CodeInvalidSession, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := decodeAsk([]byte(tc.body), testLimits)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("decodeAsk: %v", err)
				}
				if req.Question == "" {
					t.Fatal("question lost")
				}
				return
			}
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *Error %s", err, tc.code)
			}
			if ae.Code != tc.code || ae.Status != tc.status {
				t.Fatalf("got %d %s, want %d %s", ae.Status, ae.Code, tc.status, tc.code)
			}
		})
	}
}

func TestCheckJSONContentType(t *testing.T) {
	for ct, ok := range map[string]bool{
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"application/json; charset=UTF-8":   true,
		"application/json; charset=latin1":  false,
		"text/plain":                        false,
		"":                                  false,
		"application/x-www-form-urlencoded": false,
		"application/json;;;":               false,
	} {
		if got := checkJSONContentType(ct) == nil; got != ok {
			t.Errorf("checkJSONContentType(%q) ok = %v, want %v", ct, got, ok)
		}
	}
}

func TestDecodeChat(t *testing.T) {
	tests := []struct {
		name, body, question, code string
		turns                      int // of history
	}{
		{"last user message", `{"model":"x","messages":[{"role":"user","content":"first"},{"role":"assistant","content":"a"},{"role":"user","content":"second"}]}`, "second", "", 2},
		{"system and developer ignored", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"first"},{"role":"developer","content":"x"},{"role":"user","content":"second"}]}`, "second", "", 1},
		{"tool role", `{"messages":[{"role":"user","content":"a"},{"role":"tool","content":"42","tool_call_id":"c1"},{"role":"user","content":"b"}]}`, "", CodeUnsupportedRole, 0},
		{"function role", `{"messages":[{"role":"function","name":"f","content":"x"},{"role":"user","content":"b"}]}`, "", CodeUnsupportedRole, 0},
		{"unknown role", `{"messages":[{"role":"critic","content":"x"},{"role":"user","content":"b"}]}`, "", CodeUnsupportedRole, 0},
		{"last message not the user's", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`, "", CodeBadRequest, 0},
		{"content parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"how "},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"now"}]}]}`, "how now", "", 0},
		{"unknown fields ignored", `{"temperature":0.2,"messages":[{"role":"user","content":"q"}]}`, "q", "", 0},
		{"no user message", `{"messages":[{"role":"system","content":"be nice"}]}`, "", CodeEmptyQuestion, 0},
		{"no messages", `{}`, "", CodeEmptyQuestion, 0},
		{"zero-width user message", `{"messages":[{"role":"user","content":"hi"},{"role":"user","content":"\u200b \u200b"}]}`, "", CodeEmptyQuestion, 0},
		{"zero-width content parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"\ufeff"},{"type":"text","text":"\u200c"}]}]}`, "", CodeEmptyQuestion, 0},
		{"zero-width kept in a question", `{"messages":[{"role":"user","content":"\u200bq\u200b"}]}`, "\u200bq\u200b", "", 0},
		{"stream", `{"stream":true,"messages":[{"role":"user","content":"q"}]}`, "q", "", 0},
		{"bad content", `{"messages":[{"role":"user","content":{"a":1}}]}`, "", CodeBadJSON, 0},
		{"too long", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 65) + `"}]}`, "", CodeQuestionTooLong, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, q, turns, err := decodeChat([]byte(tc.body), testLimits)
			if tc.code == "" {
				if err != nil || q != tc.question || len(turns) != tc.turns {
					t.Fatalf("got %q with %d turns, %v; want %q with %d", q, len(turns), err, tc.question, tc.turns)
				}
				return
			}
			var ae *Error
			if !errors.As(err, &ae) || ae.Code != tc.code {
				t.Fatalf("err = %v, want %s", err, tc.code)
			}
		})
	}
}

func TestSaneRequestID(t *testing.T) {
	for id, ok := range map[string]bool{
		"abc-123":                true,
		"trace:1.2_3":            true,
		"":                       false,
		"has space":              false,
		"new\nline":              false,
		strings.Repeat("a", 128): true,
		strings.Repeat("a", 129): false,
		"<script>":               false,
	} {
		if saneRequestID(id) != ok {
			t.Errorf("saneRequestID(%q) = %v, want %v", id, !ok, ok)
		}
	}
}

// FuzzDecodeAsk checks that no body makes the decoder panic, that every
// refusal is a 4xx *Error, and that an accepted request satisfies every
// limit.
func FuzzDecodeAsk(f *testing.F) {
	for _, s := range []string{
		`{"question":"How do I return an item?"}`,
		`{"tenant_id":"acme","session_id":"s","question":"退货政策是什么？"}`,
		`{"question":"\ud800"}`,
		"{\"question\":\"\xff\"}",
		`{"question":""}`, `[]`, `null`, `{"question":1e999}`, `{"a":{"b":[[[[]]]]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeAsk(body, testLimits)
		if err != nil {
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if ae.Status < 400 || ae.Status > 499 || ae.Code == "" {
				t.Fatalf("refusal %d %q is not a coded 4xx", ae.Status, ae.Code)
			}
			if es := errorStatus(err); es.Status != ae.Status {
				t.Fatalf("errorStatus changed the status: %d -> %d", ae.Status, es.Status)
			}
			return
		}
		if strings.TrimSpace(req.Question) == "" || len(req.Question) > testLimits.maxQuestion ||
			!utf8.ValidString(req.Question) {
			t.Fatalf("accepted a bad question %q", req.Question)
		}
		if req.TenantID != "" && !validTenant(req.TenantID) {
			t.Fatalf("accepted a bad tenant %q", req.TenantID)
		}
		if len(req.SessionID) > maxSessionBytes {
			t.Fatalf("accepted a long session id")
		}
	})
}

// FuzzAskHandler sends arbitrary bodies through the whole handler stack
// (with a chain that needs no model) and checks that every response is a
// 200 answer or a coded 4xx JSON error.
func FuzzAskHandler(f *testing.F) {
	h := newHarness(f, harnessOptions{config: func(c *config.Config) {
		c.Tiers = []config.Tier{
			{Name: "retrieval", Kind: "retrieval"},
			{Name: "static", Kind: "static", Static: config.StaticTier{Message: "Please contact customer service."}},
		}
	}})
	f.Add([]byte(`{"question":"How do I return an item?"}`), "application/json")
	f.Add([]byte(`{"question":"x","tenant_id":"t"}`), "application/json; charset=utf-8")
	f.Add([]byte(`{"question":"x"}`), "text/plain")
	f.Add([]byte("{\"question\":\"\xc3\"}"), "application/json")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/ask", bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(w, req)
		switch {
		case w.Code == http.StatusOK:
			var a AskResponse
			if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || a.Answer == "" || a.Source == "" {
				t.Fatalf("200 with body %s", w.Body)
			}
		case w.Code >= 400 && w.Code < 500:
			var e errorBody
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Code == "" {
				t.Fatalf("%d with body %s", w.Code, w.Body)
			}
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
}

// gzipped returns s compressed with gzip.
func gzipped(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.String()
}

// TestContentEncoding guards the body's encoding: a gzip body is decoded
// (not read as plain JSON), bounded by max_body_bytes after decoding as
// well as before; a broken gzip body is 400 and any other encoding 415,
// with no model call.
func TestContentEncoding(t *testing.T) {
	h := newHarness(t, harnessOptions{}) // max_body_bytes 2048
	q := `{"question":"How do I return an item?"}`
	for _, enc := range []string{"gzip", "GZIP", "x-gzip"} {
		if w := h.do(http.MethodPost, "/v1/ask", gzipped(q), "Content-Encoding", enc); w.Code != http.StatusOK {
			t.Fatalf("Content-Encoding %s: %d %s", enc, w.Code, w.Body)
		}
	}
	if w := h.do(http.MethodPost, "/v1/ask", q, "Content-Encoding", "identity"); w.Code != http.StatusOK {
		t.Fatalf("identity: %d %s", w.Code, w.Body)
	}
	calls := h.upstreamCalls()
	bomb := gzipped(`{"question":"` + strings.Repeat("a", 1<<20) + `"}`) // 1 MiB, a few KB gzipped
	if len(bomb) > 2048 {
		t.Fatalf("the test's gzip bomb is %d bytes, more than the body limit before decoding", len(bomb))
	}
	for _, tc := range []struct {
		body, enc string
		status    int
		code      string
	}{
		{bomb, "gzip", http.StatusRequestEntityTooLarge, CodeBodyTooLarge},
		{gzipped(strings.Repeat(" ", 3000) + q), "gzip", http.StatusRequestEntityTooLarge, CodeBodyTooLarge},
		{q, "gzip", http.StatusBadRequest, CodeBadRequest},
		{gzipped(q)[:20], "gzip", http.StatusBadRequest, CodeBadRequest},
		{q, "br", http.StatusUnsupportedMediaType, CodeUnsupportedMedia},
		{q, "deflate", http.StatusUnsupportedMediaType, CodeUnsupportedMedia},
		{gzipped(q), "gzip, gzip", http.StatusUnsupportedMediaType, CodeUnsupportedMedia},
	} {
		w := h.do(http.MethodPost, "/v1/ask", tc.body, "Content-Encoding", tc.enc)
		if w.Code != tc.status || decodeError(t, w).Error.Code != tc.code {
			t.Errorf("%s body of %d bytes: %d %s, want %d %s", tc.enc, len(tc.body), w.Code, w.Body, tc.status, tc.code)
		}
	}
	if n := h.upstreamCalls() - calls; n != 0 {
		t.Fatalf("%d upstream calls for refused bodies", n)
	}
}

// TestHistoryTurns: history turns lose their control characters (not
// tab and line breaks), keep only the newest turns, and are refused when
// nothing readable is left or the kept ones are too long.
func TestHistoryTurns(t *testing.T) {
	l := limits{historyTurns: 2, historyBytes: 10}
	tt := func(contents ...string) []turnText {
		out := make([]turnText, len(contents))
		for i, c := range contents {
			out[i] = turnText{role: "user", content: c, path: "history[" + string(rune('0'+i)) + "]"}
		}
		return out
	}
	got, err := history(tt("dropped", "a\x00b\x1b", "c\td\n"), l)
	if err != nil || len(got) != 2 || got[0].Content != "ab" || got[1].Content != "c\td\n" {
		t.Fatalf("got %+v, %v", got, err)
	}
	var ae *Error
	if _, err := history(tt("ok", "\x07\u200b"), l); !errors.As(err, &ae) || ae.Code != CodeInvalidHistory || !strings.Contains(ae.Message, "history[1]") {
		t.Fatalf("control only: %v", err)
	}
	if _, err := history(tt("123456", "123456"), l); !errors.As(err, &ae) || ae.Code != CodeHistoryTooLong || ae.Status != 413 {
		t.Fatalf("too long: %v", err)
	}
	if got, err := history(nil, l); got != nil || err != nil {
		t.Fatalf("none: %v, %v", got, err)
	}
}
