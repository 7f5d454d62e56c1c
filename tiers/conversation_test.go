package tiers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/retrieval"
)

func turns(contents ...string) []Turn {
	out := make([]Turn, len(contents))
	for i, c := range contents {
		out[i] = Turn{Role: []string{RoleUser, RoleAssistant}[i%2], Content: c}
	}
	return out
}

func TestHistoryMessages(t *testing.T) {
	long := strings.Repeat("x", 3000)
	big := strings.Repeat("元", 1300) // 3900 bytes: two fit in the bound
	old := strings.Repeat("o", 1000)
	for _, tc := range []struct {
		name    string
		history []Turn
		n       int
		want    []string // contents, oldest first
	}{
		{"none", nil, 0, nil},
		{"negative sends none", turns("a", "b"), -1, nil},
		{"all when fewer", turns("a", "b", "c"), 0, []string{"a", "b", "c"}},
		{"default keeps the newest 6", turns("1", "2", "3", "4", "5", "6", "7", "8"), 0, []string{"3", "4", "5", "6", "7", "8"}},
		{"n newest", turns("1", "2", "3"), 2, []string{"2", "3"}},
		{"a long turn is cut", turns(long), 1, []string{strings.Repeat("x", maxTurnRunes) + "…"}},
		{"the size bound drops the oldest", turns(old, big, big), 10, []string{big, big}},
		{"trimmed", turns("  hi \n"), 1, []string{"hi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := historyMessages(tc.history, tc.n)
			if len(got) != len(tc.want) {
				t.Fatalf("%d messages, want %d", len(got), len(tc.want))
			}
			for i, m := range got {
				if m.Content != tc.want[i] {
					t.Errorf("message %d = %.20q…, want %.20q…", i, m.Content, tc.want[i])
				}
				wantRole := tc.history[len(tc.history)-len(got)+i].Role
				if m.Role != wantRole {
					t.Errorf("message %d role %s, want %s", i, m.Role, wantRole)
				}
			}
		})
	}
}

func TestHistoryDigest(t *testing.T) {
	a := HistoryDigest(turns("I ordered a jacket", "ok"))
	for name, other := range map[string][]Turn{
		"another content":    turns("I ordered a phone", "ok"),
		"another role":       {{Role: RoleAssistant, Content: "I ordered a jacket"}, {Role: RoleAssistant, Content: "ok"}},
		"moved boundary":     turns("I ordered a jacke", "tok"),
		"one turn less":      turns("I ordered a jacket"),
		"another turn order": turns("ok", "I ordered a jacket"),
	} {
		if HistoryDigest(other) == a {
			t.Errorf("%s: same digest", name)
		}
	}
	if HistoryDigest(turns("I ordered a jacket", "ok")) != a || len(a) != 32 {
		t.Errorf("digest %q not stable or not 32 hex characters", a)
	}
	if HistoryDigest(nil) != "" {
		t.Error("no history has a digest")
	}
}

// TestCacheTiersSkipConversations: a question with history misses both
// cache tiers at once, without embedding, and is never stored, even where
// the same question alone is cached.
func TestCacheTiersSkipConversations(t *testing.T) {
	r := newCacheRig(t, nil)
	q := "How do I return an item?"
	if _, err := r.run("acme", q, primary("return it")); KindOf(err) != KindMiss {
		t.Fatalf("first ask: %v", err)
	}
	conv := Query{Tenant: "acme", Question: q, History: turns("I ordered a jacket"), Memo: &Memo{}}
	calls := r.emb.calls.Load()
	for _, c := range []*Cache{r.sem, r.stale} {
		if _, err := c.Answer(context.Background(), conv); KindOf(err) != KindMiss || !errors.Is(err, errConversation) {
			t.Fatalf("%s: err %v, want a miss", c.Name(), err)
		}
	}
	r.sem.Remember(context.Background(), conv, primary("for the jacket"))
	if n := r.emb.calls.Load(); n != calls {
		t.Fatalf("a conversation embedded %d times", n-calls)
	}
	if a, err := r.ask("acme", q); err != nil || a.Text != "return it" {
		t.Fatalf("the lone question: %+v, %v; want its own answer", a, err)
	}
}

// chatReply is a chat completion answering content.
func chatReply(content string) http.HandlerFunc {
	body, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]string{"role": "assistant", "content": content}}},
		"usage": map[string]int{"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}})
	return reply(200, string(body))
}

func TestCondenser(t *testing.T) {
	conv := Query{Question: "and who pays the postage?", History: turns("I ordered a jacket", "Great!", "how long do I have to return it?")}
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	}
	for _, tc := range []struct {
		name    string
		h       http.HandlerFunc
		want    string
		kind    Kind
		timeout time.Duration
	}{
		{"first line, unquoted", chatReply("  \"Who pays the return postage for a jacket?\"\nI hope that helps."), "Who pays the return postage for a jacket?", "", 0},
		{"empty", chatReply(" \n "), "", KindEmpty, 0},
		{"no choices", reply(200, `{"id":"x","object":"chat.completion","choices":[]}`), "", KindEmpty, 0},
		{"server error", reply(503, `{"error":{"message":"down"}}`), "", KindServer, 0},
		{"timeout", slow, "", KindTimeout, 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, last := upstream(t, tc.h)
			g := &releasedGuard{}
			c := NewCondenser(CondenserConfig{Model: candidate("rw", srv.URL), Timeout: tc.timeout})
			got, err := c.Condense(context.Background(), g, conv)
			if got != tc.want || KindOf(err) != tc.kind {
				t.Fatalf("got %q, %v; want %q, kind %q", got, err, tc.want, tc.kind)
			}
			if len(g.errs) != 1 || KindOf(g.errs[0]) != tc.kind || g.asked[0] != CondenseTier+"/rw" {
				t.Fatalf("guard asked %v, released with %v", g.asked, g.errs)
			}
			srv.Close() // waits for the handler that recorded the request
			for _, want := range []string{"User: I ordered a jacket", "Assistant: Great!",
				"Last question: and who pays the postage?", `"max_tokens":200`} {
				if !strings.Contains(*last, want) {
					t.Errorf("prompt lacks %q: %s", want, *last)
				}
			}
		})
	}
	srv, _ := upstream(t, chatReply("x"))
	g := &releasedGuard{refuse: true}
	_, err := NewCondenser(CondenserConfig{Model: candidate("rw", srv.URL)}).Condense(context.Background(), g, conv)
	if KindOf(err) != KindUnavailable || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("refused: %v", err)
	}
}

// condense returns the Condense of a Memo rewriting with the model at url.
func condense(url string) func(context.Context, Query) (string, error) {
	c := NewCondenser(CondenserConfig{Model: candidate("rw", url)})
	return func(ctx context.Context, q Query) (string, error) { return c.Condense(ctx, nil, q) }
}

// queryRetriever records the query text it is asked.
type queryRetriever struct {
	fakeRetriever
	asked []string
}

func (r *queryRetriever) Retrieve(ctx context.Context, q string, k int) ([]retrieval.Doc, error) {
	r.asked = append(r.asked, q)
	return r.fakeRetriever.Retrieve(ctx, q, k)
}

// TestMemoDocsOfConversation: a question with history is retrieved as
// its rewrite when the condenser answers, else with its earlier user
// turns; a retriever without follow-up support gets them as one text.
func TestMemoDocsOfConversation(t *testing.T) {
	conv := Query{Question: "how long?", History: turns("I want to return a jacket", "Sure.")}
	good, _ := upstream(t, chatReply("How long do I have to return a jacket?"))
	down, _ := upstream(t, reply(503, `{"error":{"message":"down"}}`))
	for _, tc := range []struct {
		name string
		m    *Memo
		want string
	}{
		{"no condenser", &Memo{}, "how long?\nI want to return a jacket"},
		{"rewrite", &Memo{Condense: condense(good.URL)}, "How long do I have to return a jacket?"},
		{"failed rewrite", &Memo{Condense: condense(down.URL)}, "how long?\nI want to return a jacket"},
		{"no memo", nil, "how long?\nI want to return a jacket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &queryRetriever{fakeRetriever: fakeRetriever{docs: testDocs}}
			if _, err := tc.m.Docs(context.Background(), r, conv, 2); err != nil {
				t.Fatal(err)
			}
			if len(r.asked) != 1 || r.asked[0] != tc.want {
				t.Fatalf("retriever asked %q, want %q", r.asked, tc.want)
			}
		})
	}
	// A vector retriever gets the embedding of the text it searches for,
	// not the lone question's.
	var embedded []string
	emb := embedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
		embedded = append(embedded, texts...)
		return cache.NewHashEmbedder(0).Embed(ctx, texts)
	})
	kb, err := retrieval.New([]retrieval.Doc{{ID: "returns", Title: "Returns", Text: "Return a jacket within 7 days."}})
	if err != nil {
		t.Fatal(err)
	}
	h := retrieval.NewHybrid(retrieval.HybridConfig{Lexical: kb, Embedder: emb})
	docs, err := (&Memo{Embedder: emb}).Docs(context.Background(), h, conv, 1)
	if err != nil || len(docs) != 1 || docs[0].ID != "returns" {
		t.Fatalf("hybrid: %v, %v", docs, err)
	}
	if len(embedded) == 0 || embedded[0] != "how long?\nI want to return a jacket" {
		t.Fatalf("embedded %q first, want the follow-up's text", embedded)
	}
}
