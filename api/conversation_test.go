package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

const modelCondense = "test-condense"

// A conversation of testdata/kb-followups.jsonl whose follow-up names
// nothing an article matches: the bare follow-up finds no article, the
// follow-up with its history finds invoiceArticle first.
var (
	invoiceHistory = []HistoryTurn{
		{Role: "user", Content: "The invoice you sent is in my name but it should be my company's"},
		{Role: "assistant", Content: "You can request a reissue under Invoice Details with the correct title and tax ID."},
	}
	bootsHistory = []HistoryTurn{
		{Role: "user", Content: "The boots I got on Monday are too tight."},
		{Role: "assistant", Content: "You can swap shoes for another size of the same product within 7 days of delivery."},
	}
)

const (
	followUp       = "can I do that more than once if I mess up again?"
	invoiceArticle = "en-invoice-correct"
)

// chatRecord is a chat request as the upstream got it.
type chatRecord struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// upstreamRecorder records the chat requests that reach the upstream and
// serves the condensing model itself: a rewrite, or with failing set a 500.
type upstreamRecorder struct {
	mu      sync.Mutex
	chats   []chatRecord // to the chat models, in order
	rewrite string
	failing atomic.Bool
	// condenseCalls counts the calls of the condensing model.
	condenseCalls atomic.Int64
}

func (u *upstreamRecorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var c chatRecord
		_ = json.Unmarshal(body, &c)
		if c.Model == modelCondense {
			u.condenseCalls.Add(1)
			u.condense(w)
			return
		}
		u.mu.Lock()
		u.chats = append(u.chats, c)
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

func (u *upstreamRecorder) condense(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	if u.failing.Load() {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"message":"condenser down","type":"server_error"}}`)
		return
	}
	out, _ := json.Marshal(map[string]any{
		"id": "c1", "object": "chat.completion", "created": 1, "model": modelCondense,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]string{"role": "assistant", "content": u.rewrite + "\nextra line"}}},
		"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	_, _ = w.Write(out)
}

// requests returns the chat requests recorded for model.
func (u *upstreamRecorder) requests(model string) []chatRecord {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []chatRecord
	for _, c := range u.chats {
		if c.Model == model {
			out = append(out, c)
		}
	}
	return out
}

// conversationHarness serves testdata/kb through the test chain, its
// upstream recorded by the returned recorder.
func conversationHarness(t *testing.T, cfg func(*config.Config)) (*harness, *upstreamRecorder) {
	t.Helper()
	kb, err := retrieval.Open("../testdata/kb")
	if err != nil {
		t.Fatal(err)
	}
	rec := &upstreamRecorder{}
	h := newHarness(t, harnessOptions{kb: kb, upstream: rec.wrap, config: func(c *config.Config) {
		c.Server.MaxQuestionBytes, c.Server.MaxBodyBytes = 4096, 64<<10
		if cfg != nil {
			cfg(c)
		}
	}})
	h.t = t
	return h, rec
}

// askWith posts question with history to path and returns the response.
func (h *harness) askWith(path, question string, history []HistoryTurn, headers ...string) (int, AskResponse, string) {
	h.t.Helper()
	body, _ := json.Marshal(AskRequest{Question: question, History: history})
	w := h.do(http.MethodPost, path, string(body), headers...)
	var a AskResponse
	if w.Code == http.StatusOK && path == "/v1/ask" {
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
			h.t.Fatal(err)
		}
	}
	return w.Code, a, w.Body.String()
}

// askConv asks question after history on /v1/ask and wants a 200.
func (h *harness) askConv(question string, history []HistoryTurn, headers ...string) AskResponse {
	h.t.Helper()
	code, a, body := h.askWith("/v1/ask", question, history, headers...)
	if code != http.StatusOK {
		h.t.Fatalf("ask %q: %d %s", question, code, body)
	}
	return a
}

func docIDs(a AskResponse) []string {
	var out []string
	for _, d := range a.Docs {
		out = append(out, d.ID)
	}
	return out
}

func firstDoc(a AskResponse) string {
	if len(a.Docs) == 0 {
		return ""
	}
	return a.Docs[0].ID
}

func attempt(a AskResponse, tier string) (AttemptInfo, bool) {
	for _, at := range a.Attempts {
		if at.Tier == tier {
			return at, true
		}
	}
	return AttemptInfo{}, false
}

// TestConversationFollowUpFindsItsArticle: a three-turn conversation whose
// follow-up finds its article only because of the history, answered by
// the primary with the history in its prompt, and by the retrieval tier
// when every model is down.
func TestConversationFollowUpFindsItsArticle(t *testing.T) {
	t.Run("the bare follow-up", func(t *testing.T) {
		h, _ := conversationHarness(t, nil)
		h.up.SetFault(llmtest.AnyModel, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
		if a := h.askConv(followUp, nil); slices.Contains(docIDs(a), invoiceArticle) {
			t.Fatalf("the bare follow-up found %v: the test proves nothing", docIDs(a))
		}
	})
	t.Run("primary", func(t *testing.T) {
		h, rec := conversationHarness(t, nil)
		a := h.askConv(followUp, invoiceHistory)
		if a.Source != tiers.SourcePrimary || firstDoc(a) != invoiceArticle {
			t.Fatalf("source %s, docs %v; want primary with %s first", a.Source, docIDs(a), invoiceArticle)
		}
		reqs := rec.requests(modelPrimary)
		if len(reqs) != 1 {
			t.Fatalf("%d primary calls, want 1", len(reqs))
		}
		m := reqs[0].Messages
		if len(m) != 4 || m[0].Role != "system" || m[1].Role != "user" || m[1].Content != invoiceHistory[0].Content ||
			m[2].Role != "assistant" || m[2].Content != invoiceHistory[1].Content || m[3].Role != "user" ||
			!strings.Contains(m[3].Content, "Question: "+followUp) || !strings.Contains(m[3].Content, "Invoice") {
			t.Fatalf("prompt %+v: want system, the two turns, then the documents and the question", m)
		}
	})
	t.Run("every model down", func(t *testing.T) {
		h, _ := conversationHarness(t, nil)
		h.up.SetFault(llmtest.AnyModel, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
		for _, path := range []string{"/v1/ask", "/v1/ask/stream"} {
			code, a, body := h.askWith(path, followUp, invoiceHistory)
			if path == "/v1/ask/stream" {
				a = streamDone(t, code, body)
			}
			if a.Source != tiers.SourceRetrieval || firstDoc(a) != invoiceArticle {
				t.Fatalf("%s: source %s, docs %v; want retrieval with %s first", path, a.Source, docIDs(a), invoiceArticle)
			}
		}
	})
}

// streamDone returns the AskResponse of the done event of an SSE body.
func streamDone(t *testing.T, code int, body string) AskResponse {
	t.Helper()
	if code != http.StatusOK {
		t.Fatalf("stream: %d %s", code, body)
	}
	var d StreamDoneData
	if err := json.Unmarshal([]byte(firstEvent(readSSE(t, strings.NewReader(body)), "done").Data), &d); err != nil {
		t.Fatal(err)
	}
	return d.AskResponse
}

// TestConversationsNeverShareCache: a question with history is neither
// served from nor stored in the semantic cache or the stale cache, while
// the same question alone is cached as before.
func TestConversationsNeverShareCache(t *testing.T) {
	h, _ := conversationHarness(t, func(c *config.Config) {
		c.Tiers = slices.Insert(c.Tiers, 3, config.Tier{Name: "stale", Kind: config.KindStaleCache,
			Cache: config.CacheTier{Embedder: "hash", Grace: time.Hour}, Timeout: 300 * time.Millisecond})
	})
	if a := h.askConv(followUp, nil); a.Source != tiers.SourcePrimary {
		t.Fatalf("first bare question from %s", a.Source)
	}
	if a := h.askConv(followUp, nil); a.Source != tiers.SourceCache {
		t.Fatalf("second bare question from %s, want the cache (it was stored)", a.Source)
	}
	for i, hist := range [][]HistoryTurn{invoiceHistory, invoiceHistory, bootsHistory} {
		a := h.askConv(followUp, hist)
		at, _ := attempt(a, "cache")
		if a.Source != tiers.SourcePrimary || at.Outcome != "miss" {
			t.Fatalf("conversation %d: source %s, cache attempt %+v; want primary after a miss", i, a.Source, at)
		}
	}
	h.up.SetFault(llmtest.AnyModel, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
	a := h.askConv(followUp, bootsHistory)
	if at, _ := attempt(a, "stale"); a.Source == tiers.SourceStaleCache || at.Outcome != "miss" {
		t.Fatalf("models down: source %s, stale attempt %+v; want a miss", a.Source, at)
	}
	h.srv.p.Breakers().Get("tier/cache").Trip() // the semantic cache out: the stale tier answers the bare question
	if a := h.askConv(followUp, nil); a.Source != tiers.SourceStaleCache {
		t.Fatalf("bare question, models down: source %s, want stale_cache", a.Source)
	}
}

// TestConversationsNeverShareFlight: the same follow-up asked at once in
// two conversations makes two model calls, each answered for its own
// conversation; asked at once in one conversation, it makes one.
func TestConversationsNeverShareFlight(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second []HistoryTurn
		calls  int
	}{
		{"different histories", bootsHistory, 2},
		{"the same history", invoiceHistory, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, rec := conversationHarness(t, nil)
			h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeLatency, Delay: 400 * time.Millisecond})
			var wg sync.WaitGroup
			answers := make([]AskResponse, 2)
			wg.Add(1)
			go func() { defer wg.Done(); answers[0] = h.askConv(followUp, invoiceHistory) }()
			for deadline := time.Now().Add(2 * time.Second); len(rec.requests(modelPrimary)) == 0; {
				if time.Now().After(deadline) {
					t.Fatal("the first question never reached the primary")
				}
				time.Sleep(5 * time.Millisecond)
			}
			answers[1] = h.askConv(followUp, tc.second)
			wg.Wait()
			if n := len(rec.requests(modelPrimary)); n != tc.calls {
				t.Fatalf("%d primary calls, want %d", n, tc.calls)
			}
			if firstDoc(answers[0]) != invoiceArticle {
				t.Errorf("first conversation: docs %v", docIDs(answers[0]))
			}
			if tc.calls == 2 && firstDoc(answers[1]) == invoiceArticle {
				t.Errorf("second conversation got the first one's documents %v", docIDs(answers[1]))
			}
		})
	}
}

// TestHistoryBounds: server.max_history_turns keeps the newest turns,
// server.max_history_bytes refuses what is left when it is too long
// (413, no model call), and each llm tier sends its history_turns.
func TestHistoryBounds(t *testing.T) {
	turns := func(n, size int) []HistoryTurn {
		out := make([]HistoryTurn, n)
		for i := range out {
			out[i] = HistoryTurn{Role: []string{"user", "assistant"}[i%2], Content: strings.Repeat(string(rune('a'+i)), size)}
		}
		return out
	}
	h, rec := conversationHarness(t, func(c *config.Config) {
		c.Server.MaxHistoryTurns, c.Server.MaxHistoryBytes = 4, 100
		ten, two := 10, 2
		c.Tiers[1].LLM.HistoryTurns, c.Tiers[2].LLM.HistoryTurns = &ten, &two
	})
	h.askConv(followUp, turns(7, 20)) // 140 bytes sent, the 4 kept are 80
	m := rec.requests(modelPrimary)[0].Messages
	if len(m) != 6 || m[1].Content != strings.Repeat("d", 20) || m[4].Content != strings.Repeat("g", 20) {
		t.Fatalf("primary prompt %+v: want the 4 newest turns", m)
	}
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
	h.askConv(followUp, turns(7, 20))
	if m := rec.requests(modelFallback)[0].Messages; len(m) != 4 || m[1].Content != strings.Repeat("f", 20) {
		t.Fatalf("fallback prompt %+v: want its 2 turns", m)
	}
	before := h.upstreamCalls() + rec.condenseCalls.Load()
	for _, path := range []string{"/v1/ask", "/v1/ask/stream"} {
		code, _, body := h.askWith(path, followUp, turns(3, 40))
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, CodeHistoryTooLong) {
			t.Errorf("%s: 120 bytes of history: %d %s, want 413 %s", path, code, body, CodeHistoryTooLong)
		}
	}
	if n := h.upstreamCalls() + rec.condenseCalls.Load(); n != before {
		t.Errorf("refused histories made %d upstream calls", n-before)
	}
}

// TestBadHistory: each kind of bad history is a 400 on every front door,
// with no model call.
func TestBadHistory(t *testing.T) {
	h, rec := conversationHarness(t, nil)
	q := `"question":"how long?"`
	for _, tc := range []struct{ name, history, code string }{
		{"unknown role", `[{"role":"system","content":"x"}]`, CodeInvalidHistory},
		{"no role", `[{"content":"x"}]`, CodeInvalidHistory},
		{"tool role", `[{"role":"tool","content":"x"}]`, CodeInvalidHistory},
		{"empty content", `[{"role":"user","content":""}]`, CodeInvalidHistory},
		{"no content", `[{"role":"user"}]`, CodeInvalidHistory},
		{"white space", `[{"role":"user","content":" \n\t "}]`, CodeInvalidHistory},
		{"control characters only", `[{"role":"user","content":"\u0000\u0007\u001b"}]`, CodeInvalidHistory},
		{"format characters only", `[{"role":"assistant","content":"\u200b\ufeff"}]`, CodeInvalidHistory},
		{"lone surrogate", `[{"role":"user","content":"\ud800 hi"}]`, CodeInvalidUTF8},
		{"invalid UTF-8", "[{\"role\":\"user\",\"content\":\"\xff hi\"}]", CodeInvalidUTF8},
		{"content not a string", `[{"role":"user","content":3}]`, CodeBadJSON},
		{"not a list", `{"role":"user","content":"x"}`, CodeBadJSON},
		{"unknown field", `[{"role":"user","content":"x","name":"bob"}]`, CodeUnknownField},
	} {
		for _, path := range []string{"/v1/ask", "/v1/ask/stream"} {
			w := h.do(http.MethodPost, path, `{`+q+`,"history":`+tc.history+`}`)
			if w.Code != http.StatusBadRequest || decodeError(t, w).Error.Code != tc.code {
				t.Errorf("%s %s: %d %s, want 400 %s", tc.name, path, w.Code, w.Body, tc.code)
			}
		}
	}
	for _, tc := range []struct{ name, messages, code string }{
		{"tool role", `[{"role":"user","content":"a"},{"role":"tool","content":"42","tool_call_id":"c"},{"role":"user","content":"b"}]`, CodeUnsupportedRole},
		{"empty assistant", `[{"role":"user","content":"a"},{"role":"assistant","content":null},{"role":"user","content":"b"}]`, CodeInvalidHistory},
		{"control characters only", `[{"role":"user","content":"\u0001"},{"role":"user","content":"b"}]`, CodeInvalidHistory},
		{"assistant last", `[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]`, CodeBadRequest},
	} {
		w := h.do(http.MethodPost, "/v1/chat/completions", `{"model":"ragfuse","messages":`+tc.messages+`}`)
		if w.Code != http.StatusBadRequest || decodeError(t, w).Error.Code != tc.code {
			t.Errorf("chat %s: %d %s, want 400 %s", tc.name, w.Code, w.Body, tc.code)
		}
	}
	if n := h.upstreamCalls() + rec.condenseCalls.Load(); n != 0 {
		t.Fatalf("bad histories made %d upstream calls", n)
	}
}

// TestChatCompletionsConversation: /v1/chat/completions takes the whole
// messages array as the conversation; the client's system message is not
// sent to the models.
func TestChatCompletionsConversation(t *testing.T) {
	h, rec := conversationHarness(t, nil)
	msgs, _ := json.Marshal([]map[string]string{
		{"role": "system", "content": "You are a pirate."},
		{"role": "user", "content": invoiceHistory[0].Content},
		{"role": "assistant", "content": invoiceHistory[1].Content},
		{"role": "user", "content": followUp},
	})
	w := h.do(http.MethodPost, "/v1/chat/completions", `{"model":"ragfuse","messages":`+string(msgs)+`}`)
	if w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var out ChatCompletion
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Ragfuse.Docs) == 0 || out.Ragfuse.Docs[0].ID != invoiceArticle {
		t.Fatalf("docs %+v, want %s first", out.Ragfuse.Docs, invoiceArticle)
	}
	m := rec.requests(modelPrimary)[0].Messages
	if len(m) != 4 || m[0].Content != tiers.DefaultSystemPrompt || m[2].Content != invoiceHistory[1].Content {
		t.Fatalf("prompt %+v: want ragfuse's system prompt and the two turns", m)
	}
}

// TestCondense: knowledge_base.condense rewrites a follow-up before
// retrieval, recorded as an attempt of tier condense; when the rewrite
// fails the lexical follow-up query finds the article, and after two
// failures the condensing model's breaker opens and it is not called.
func TestCondense(t *testing.T) {
	h, rec := conversationHarness(t, func(c *config.Config) {
		c.Models[modelCondense] = config.Model{BaseURL: c.Models[modelPrimary].BaseURL}
		c.KnowledgeBase.Condense = &config.Condense{Model: modelCondense}
	})
	rec.rewrite = "When will I get my refund?"
	a := h.askConv(followUp, invoiceHistory)
	at, ok := attempt(a, tiers.CondenseTier)
	if !ok || at.Model != modelCondense || at.Outcome != "success" || firstDoc(a) != "en-refund-timeline" {
		t.Fatalf("attempts %+v, docs %v: want a condense success and the rewrite's article", a.Attempts, docIDs(a))
	}
	if a.Attempts[0].Tier != "cache" || a.Source != tiers.SourcePrimary {
		t.Fatalf("attempts %+v, source %s", a.Attempts, a.Source)
	}
	// A question without history is not rewritten.
	calls := rec.condenseCalls.Load()
	if a := h.askConv("how long do refunds take?", nil); len(a.Attempts) == 0 || calls != rec.condenseCalls.Load() {
		t.Fatalf("a lone question called the condenser: attempts %+v", a.Attempts)
	}
	rec.failing.Store(true)
	for i, want := range []string{"server_error", "server_error", "breaker_open"} {
		before := rec.condenseCalls.Load()
		a := h.askConv(followUp, invoiceHistory)
		at, _ := attempt(a, tiers.CondenseTier)
		if at.Outcome != want || firstDoc(a) != invoiceArticle || a.Source != tiers.SourcePrimary {
			t.Fatalf("question %d: condense %+v, docs %v, source %s; want %s and %s first", i, at, docIDs(a), a.Source, want, invoiceArticle)
		}
		if called := rec.condenseCalls.Load() - before; (want == "breaker_open") != (called == 0) {
			t.Fatalf("question %d: %d condense calls with outcome %s", i, called, want)
		}
	}
	if st := h.srv.p.Breakers().Get("model/" + modelCondense).State(); st.String() != "open" {
		t.Fatalf("breaker model/%s is %s, want open", modelCondense, st)
	}
}

// TestModelsList: GET /v1/models lists the model a client may send, and
// GET /v1/models/{id} shows it.
func TestModelsList(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.t = t
	w := h.do(http.MethodGet, "/v1/models", "")
	var list modelList
	if err := json.Unmarshal(w.Body.Bytes(), &list); w.Code != http.StatusOK || err != nil ||
		list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != ModelID || list.Data[0].Object != "model" {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if w := h.do(http.MethodGet, "/v1/models/"+ModelID, ""); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"id":"ragfuse"`) {
		t.Fatalf("model: %d %s", w.Code, w.Body)
	}
	if w := h.do(http.MethodGet, "/v1/models/gpt-4", ""); w.Code != http.StatusNotFound {
		t.Fatalf("unknown model: %d %s", w.Code, w.Body)
	}
	keyed := newHarness(t, harnessOptions{api: func(c *Config) { c.Keys = map[string]string{"k-1": "acme"} }})
	if w := keyed.do(http.MethodGet, "/v1/models", ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("without a key: %d", w.Code)
	}
	if w := keyed.do(http.MethodGet, "/v1/models", "", "Authorization", "Bearer k-1"); w.Code != http.StatusOK {
		t.Fatalf("with a key: %d %s", w.Code, w.Body)
	}
}

// TestNotesFollowTheQuestionsLanguage: without Accept-Language the note
// is in the question's language; Accept-Language wins.
func TestNotesFollowTheQuestionsLanguage(t *testing.T) {
	h := newHarness(t, harnessOptions{config: func(c *config.Config) { c.Server.DefaultLanguage = "zh" }})
	h.t = t
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
	fb := func(lang string) string { return defaultNotes[lang][tiers.SourceFallback].Text }
	if a := h.ask("How long do refunds take?"); a.Note != fb("en") {
		t.Errorf("English question: note %q", a.Note)
	}
	if a := h.ask("退款要多久？"); a.Note != fb("zh") {
		t.Errorf("Chinese question: note %q", a.Note)
	}
	if a := h.ask("How long do refunds take?", "Accept-Language", "zh-CN"); a.Note != fb("zh") {
		t.Errorf("Accept-Language zh: note %q", a.Note)
	}
	w := h.do(http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"How long do refunds take?"}]}`)
	if !strings.Contains(w.Body.String(), fb("en")) {
		t.Errorf("chat without Accept-Language: %s", w.Body)
	}
}

// TestNoteInContent: with openai.note_in_content the degradation note
// ends the message content, plain and streamed; without it the content
// is the answer alone.
func TestNoteInContent(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := newHarness(t, harnessOptions{config: func(c *config.Config) { c.OpenAI.NoteInContent = on }})
		h.t = t
		h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
		note := defaultNotes["en"][tiers.SourceFallback].Text
		w := h.do(http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"How long do refunds take?"}]}`)
		var out ChatCompletion
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		content := out.Choices[0].Message.Content
		if strings.HasSuffix(content, "\n\n"+note) != on || out.Ragfuse.Note != note {
			t.Errorf("note_in_content %v: content %q", on, content)
		}
		ws := h.do(http.MethodPost, "/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"How long do refunds take?"}]}`)
		var streamed strings.Builder
		for _, ev := range readSSE(t, ws.Body) {
			var c rawChunk
			if ev.Data != "[DONE]" && json.Unmarshal([]byte(ev.Data), &c) == nil && len(c.Choices) > 0 {
				streamed.WriteString(c.Choices[0].Delta.Content)
			}
		}
		if strings.HasSuffix(streamed.String(), "\n\n"+note) != on {
			t.Errorf("note_in_content %v: streamed content %q", on, streamed.String())
		}
	}
}
