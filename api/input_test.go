package api

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// TestHTTPMetricsMethodLabelBounded: a client inventing HTTP methods must
// not add a time series per method (unbounded memory, unauthenticated).
func TestHTTPMetricsMethodLabelBounded(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for i := 0; i < 3; i++ {
		h.do("BOGUS"+strconv.Itoa(i), "/healthz", "")
		h.do("BOGUS"+strconv.Itoa(i), "/no/such/route", "")
	}
	body := h.do(http.MethodGet, "/metrics", "").Body.String()
	if strings.Contains(body, `method="BOGUS`) {
		t.Fatalf("client-chosen methods became label values:\n%s", body)
	}
	if !strings.Contains(body, `ragfuse_http_requests_total{code="405",method="other",route="/healthz"} 3`) {
		t.Fatalf("unknown methods not counted as other:\n%s", body)
	}
}

// TestNotAnObjectIsBadJSON: a body that is not a JSON object (null) is
// 400 bad_json on every JSON route, not an empty question or a missing
// breaker, and no model is called.
func TestNotAnObjectIsBadJSON(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, path := range []string{"/v1/ask", "/v1/ask/stream", "/v1/chat/completions", "/v1/admin/breakers/trip"} {
		for _, body := range []string{`null`, ` null `} {
			w := h.do(http.MethodPost, path, body)
			if w.Code != http.StatusBadRequest {
				t.Errorf("%s %q: %d %s", path, body, w.Code, w.Body)
				continue
			}
			if b := decodeError(t, w); b.Error.Code != CodeBadJSON {
				t.Errorf("%s %q: code %s", path, body, b.Error.Code)
			}
		}
	}
	if n := h.upstreamCalls(); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
}

// TestLoneSurrogateIsInvalidUTF8: a lone surrogate escape cannot be
// UTF-8; encoding/json would turn it into U+FFFD and send that to the
// model. It is refused like invalid bytes (checkQuestion's contract).
// refused posts body to path and checks it gets a 400 with code.
func refused(t *testing.T, h *harness, path, body, code string) {
	t.Helper()
	w := h.do(http.MethodPost, path, body)
	if w.Code != http.StatusBadRequest {
		t.Errorf("%s %s: %d %s", path, body, w.Code, w.Body)
		return
	}
	if b := decodeError(t, w); b.Error.Code != code {
		t.Errorf("%s %s: code %s, want %s", path, body, b.Error.Code, code)
	}
}

func TestLoneSurrogateIsInvalidUTF8(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, tc := range []struct{ path, body string }{
		{"/v1/ask", `{"question":"refund \ud800 please"}`},
		{"/v1/ask", `{"question":"refund \uDC00"}`},
		{"/v1/ask", `{"question":"refund \ud800\u0041"}`},
		{"/v1/ask/stream", `{"question":"\ud83d"}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"refund \udfff"}]}`},
	} {
		refused(t, h, tc.path, tc.body, CodeInvalidUTF8)
	}
	if n := h.upstreamCalls(); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
	// A pair, and an escaped backslash before "ud800", are fine.
	for _, q := range []string{`"smile \ud83d\ude00"`, `"path \\ud800"`} {
		if w := h.do(http.MethodPost, "/v1/ask", `{"question":`+q+`}`); w.Code != http.StatusOK {
			t.Errorf("%s: %d %s", q, w.Code, w.Body)
		}
	}
}

// TestInvisibleQuestionIsEmpty: a question of nothing but white space and
// invisible format characters (zero-width spaces, joiners, BOM) is an
// empty question on every route and costs no model call; such characters
// inside a question are left as they are.
func TestInvisibleQuestionIsEmpty(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, tc := range []struct{ path, body string }{
		{"/v1/ask", `{"question":"\u200b\u200b"}`},
		{"/v1/ask", `{"question":" \u200d\n\ufeff\u2060 "}`},
		{"/v1/ask/stream", `{"question":"\u200b"}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"\u200b\u200b"}]}`},
		{"/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"\u200c "}]}]}`},
	} {
		refused(t, h, tc.path, tc.body, CodeEmptyQuestion)
	}
	if n := h.upstreamCalls(); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
	req, err := decodeAsk([]byte(`{"question":"\u200bHow do I return an item?"}`), h.srv.lim)
	if err != nil || req.Question != "\u200bHow do I return an item?" {
		t.Fatalf("question %q, %v; want it unchanged", req.Question, err)
	}
}

// TestControlCharacterQuestionIsEmpty guards the model's time: a question
// of nothing but control characters (and white space, format characters
// and U+FFFD) is 400 empty_question on every route with no model call, and
// control characters inside a question are removed before it goes on.
func TestControlCharacterQuestionIsEmpty(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, q := range []string{`\u0000`, `\u0007\u007f`, `\u0085`, `\ufffd`, `\u001b \u200b\u0000\u009b`} {
		refused(t, h, "/v1/ask", `{"question":"`+q+`"}`, CodeEmptyQuestion)
		refused(t, h, "/v1/ask/stream", `{"question":"`+q+`"}`, CodeEmptyQuestion)
		refused(t, h, "/v1/chat/completions", `{"messages":[{"role":"user","content":"`+q+`"}]}`, CodeEmptyQuestion)
	}
	if n := h.upstreamCalls(); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
	req, err := decodeAsk([]byte(`{"question":"How do I\u0000 return\u0007 an\u0085item?\r\n\tThanks\u001b[31m"}`), h.srv.lim)
	if want := "How do I return an item?\r\n\tThanks[31m"; err != nil || req.Question != want {
		t.Fatalf("question %q, %v; want %q", req.Question, err, want)
	}
}

// TestServerOptionsDefaults: a server given no options (or negative ones)
// listens on 127.0.0.1:8080, takes questions up to 4096 bytes and bodies
// up to 64 KiB and histories of 20 turns and 16 KiB, and writes its notes
// in zh, as README documents for server: fields left out of the
// configuration file.
func TestServerOptionsDefaults(t *testing.T) {
	want := ServerOptions{Addr: "127.0.0.1:8080", MaxQuestionBytes: 4096, MaxBodyBytes: 64 << 10,
		ShutdownGrace: 15 * time.Second, DefaultLanguage: "zh", MaxHistoryTurns: 20, MaxHistoryBytes: 16384,
		ReadTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxConnections: 10000}
	if got := (ServerOptions{MaxQuestionBytes: -1, MaxBodyBytes: -1, ShutdownGrace: -1, DrainDelay: -1,
		MaxHistoryTurns: -1, MaxHistoryBytes: -1, ReadTimeout: -1, IdleTimeout: -1, MaxConnections: -1}).withDefaults(); got != want {
		t.Fatalf("negative options became %+v, want %+v", got, want)
	}
	h := libraryHarness(t, pipeline.Options{Tiers: []pipeline.Stage{{Tier: tiers.NewStatic("static", "sorry")}}}, Config{})
	if h.srv.Addr() != want.Addr {
		t.Fatalf("addr %q", h.srv.Addr())
	}
	// Digits are in no language: the notes take the default.
	if a := h.ask(strings.Repeat("7", 4096)); a.Note != defaultNotes["zh"][tiers.SourceStatic].Text {
		t.Fatalf("note %q, want the zh default", a.Note)
	}
	for body, code := range map[string]string{
		`{"question":"` + strings.Repeat("q", 4097) + `"}`:   CodeQuestionTooLong,
		`{"question":"` + strings.Repeat("q", 64<<10) + `"}`: CodeBodyTooLarge,
	} {
		w := h.do(http.MethodPost, "/v1/ask", body)
		if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), code) {
			t.Errorf("%d-byte body: %d %s, want 413 %s", len(body), w.Code, w.Body, code)
		}
	}
}
