package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// sseEvent is one parsed Server-Sent Event; Name is "" for a comment.
type sseEvent struct {
	Name, Data string
	Comment    bool
}

// readSSE parses an event stream until EOF: "event:" and "data:" fields,
// ":" comments, a blank line ending each event.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var (
		out []sseEvent
		cur sseEvent
		has bool
	)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if has {
				out = append(out, cur)
			}
			cur, has = sseEvent{}, false
		case strings.HasPrefix(line, ":"):
			out = append(out, sseEvent{Comment: true, Data: strings.TrimSpace(line[1:])})
		case strings.HasPrefix(line, "event: "):
			cur.Name, has = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			if cur.Data != "" {
				cur.Data += "\n"
			}
			cur.Data, has = cur.Data+strings.TrimPrefix(line, "data: "), true
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if has {
		t.Fatalf("stream ended inside an event: %+v", cur)
	}
	return out
}

// names returns the event names with runs of deltas as one "delta". A
// slow machine may ping anywhere, so pings are left out but for a leading
// "ping" when the stream began with one.
func names(evs []sseEvent) string {
	var out []string
	for i, e := range evs {
		n := e.Name
		switch {
		case e.Comment && i == 0:
			n = e.Data
		case e.Comment:
			continue
		}
		if len(out) > 0 && out[len(out)-1] == n {
			continue
		}
		out = append(out, n)
	}
	return strings.Join(out, " ")
}

// firstEvent returns the first event named name.
func firstEvent(evs []sseEvent, name string) sseEvent {
	for _, e := range evs {
		if e.Name == name {
			return e
		}
	}
	return sseEvent{}
}

// streamHarness is a harness with streaming settings, served over HTTP.
func streamHarness(t *testing.T, sc func(*config.Tier), heartbeat time.Duration) (*harness, *httptest.Server) {
	t.Helper()
	h := newHarness(t, harnessOptions{
		config: func(c *config.Config) {
			for i := range c.Tiers {
				if c.Tiers[i].Kind == "llm" {
					c.Tiers[i].LLM.FirstTokenTimeout = 100 * time.Millisecond
					c.Tiers[i].LLM.StallTimeout = 100 * time.Millisecond
					if sc != nil {
						sc(&c.Tiers[i])
					}
				}
			}
		},
		api: func(c *Config) { c.StreamHeartbeat = heartbeat },
	})
	ts := httptest.NewServer(h.srv.Handler())
	t.Cleanup(ts.Close)
	return h, ts
}

func postStream(t *testing.T, url, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func TestAskStreamSSE(t *testing.T) {
	tests := []struct {
		name   string
		fault  llmtest.Fault
		events string
		source string
		check  func(t *testing.T, evs []sseEvent, done StreamDoneData)
	}{
		{name: "primary", events: "meta delta done", source: "primary"},
		{name: "fallback after a hang", fault: llmtest.Fault{Mode: llmtest.ModeHang},
			events: "ping meta note delta done", source: "fallback",
			check: func(t *testing.T, evs []sseEvent, _ StreamDoneData) {
				var n StreamNoteData
				_ = json.Unmarshal([]byte(firstEvent(evs, "note").Data), &n)
				if n.Kind != NoteDegraded || !strings.Contains(n.Text, "backup model") || !n.Actions.Refresh {
					t.Errorf("degradation note %+v", n)
				}
			}},
		{name: "break after 3 chunks", fault: llmtest.Fault{Mode: llmtest.ModeBreak, After: 3},
			events: "meta delta note done", source: "primary",
			check: func(t *testing.T, evs []sseEvent, done StreamDoneData) {
				var n StreamNoteData
				_ = json.Unmarshal([]byte(firstEvent(evs, "note").Data), &n)
				if n.Kind != NoteInterrupted || n.Text != interruptedNote["en"] || !done.Interrupted ||
					!strings.Contains(done.Note, interruptedNote["en"]) {
					t.Errorf("note %+v, done %+v", n, done)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ts := streamHarness(t, nil, 20*time.Millisecond)
			h.up.SetFault(modelPrimary, tt.fault)
			res := postStream(t, ts.URL+"/v1/ask/stream", `{"question":"How do I return an item?"}`)
			if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, type %q", res.StatusCode, res.Header.Get("Content-Type"))
			}
			evs := readSSE(t, res.Body)
			got := names(evs)
			if tt.fault.Mode != llmtest.ModeHang {
				got = strings.TrimPrefix(got, "ping ") // only a hung primary is sure to hold the first event back
			}
			if got != tt.events {
				t.Fatalf("events %q, want %q", got, tt.events)
			}
			var meta StreamMetaData
			var done StreamDoneData
			if err := json.Unmarshal([]byte(firstEvent(evs, "done").Data), &done); err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			for _, e := range evs {
				switch e.Name {
				case "meta":
					_ = json.Unmarshal([]byte(e.Data), &meta)
				case "delta":
					var d StreamDeltaData
					if err := json.Unmarshal([]byte(e.Data), &d); err != nil {
						t.Fatal(err)
					}
					text.WriteString(d.Text)
				}
			}
			if string(meta.Source) != tt.source || string(done.Source) != tt.source || done.Answer != text.String() ||
				meta.RequestID != res.Header.Get(HeaderRequestID) || done.RequestID != meta.RequestID {
				t.Fatalf("meta %+v, done %+v, text %q", meta, done, text.String())
			}
			if res.Header.Get(HeaderSource) != "" && res.Header.Get(HeaderSource) != tt.source {
				t.Fatalf("%s = %q", HeaderSource, res.Header.Get(HeaderSource))
			}
			if tt.check != nil {
				tt.check(t, evs, done)
			}
		})
	}
}

func TestAskStreamErrorsBeforeTheStreamAreJSON(t *testing.T) {
	h, ts := streamHarness(t, nil, time.Hour)
	for _, body := range []string{`{"question":""}`, `{"question":"q","tenat":"x"}`, `not json`} {
		res := postStream(t, ts.URL+"/v1/ask/stream", body)
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 400 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") ||
			!strings.Contains(string(b), `"code"`) {
			t.Errorf("%s: %d %s %s", body, res.StatusCode, res.Header.Get("Content-Type"), b)
		}
	}
	if h.upstreamCalls() != 0 {
		t.Fatal("a refused question reached the model")
	}
}

// chatStream opens a go-openai stream against the server.
func chatClient(ts *httptest.Server) *openai.Client { return keyClient(ts, "unused") }

// keyClient returns a go-openai client of ts's /v1 routes sending key.
func keyClient(ts *httptest.Server, key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = ts.URL + "/v1"
	return openai.NewClientWithConfig(cfg)
}

type rawChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage   *openai.Usage     `json:"usage"`
	Ragfuse *ChunkRagfuseInfo `json:"ragfuse"`
}

func TestChatCompletionsStreamWithGoOpenAI(t *testing.T) {
	for _, broken := range []bool{false, true} {
		h, ts := streamHarness(t, nil, time.Hour)
		if broken {
			h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeBreak, After: 3})
		}
		req := openai.ChatCompletionRequest{Model: "any", Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleUser, Content: "How do I return an item?"}},
			StreamOptions: &openai.StreamOptions{IncludeUsage: true}}

		// The plain go-openai reading: the content carries the note.
		st, err := chatClient(ts).CreateChatCompletionStream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var content strings.Builder
		var finish openai.FinishReason
		for {
			r, err := st.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Choices) > 0 {
				content.WriteString(r.Choices[0].Delta.Content)
				if r.Choices[0].FinishReason != "" {
					finish = r.Choices[0].FinishReason
				}
			}
		}
		_ = st.Close()
		text := content.String()
		if !strings.HasPrefix(text, "["+modelPrimary+"] ") || strings.HasSuffix(text, interruptedNote["en"]) != broken {
			t.Fatalf("broken=%v: content %q", broken, text)
		}
		if want := map[bool]openai.FinishReason{false: "stop", true: "length"}[broken]; finish != want {
			t.Fatalf("finish %q, want %q", finish, want)
		}

		// The raw chunks: the last one has the ragfuse field, then usage.
		// (Another question: the first answer may be in the cache now.)
		req.Messages[0].Content = "How long do refunds take?"
		st, err = chatClient(ts).CreateChatCompletionStream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var last, usage rawChunk
		for {
			b, err := st.RecvRaw()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var c rawChunk
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			if c.Ragfuse != nil {
				last = c
			}
			if c.Usage != nil {
				usage = c
			}
		}
		_ = st.Close()
		if last.Ragfuse == nil || last.Ragfuse.Source != "primary" || last.Ragfuse.Interrupted != broken ||
			strings.Contains(last.Ragfuse.Note, interruptedNote["en"]) != broken {
			t.Fatalf("broken=%v: ragfuse field %+v", broken, last.Ragfuse)
		}
		if usage.Usage == nil || usage.Usage.CompletionTokens == 0 {
			t.Fatalf("usage chunk %+v", usage)
		}
	}
}

// TestAskStreamClientDisconnect closes the connection mid-answer while the
// model would stall forever: the upstream request ends at once and no
// breaker counts a failure (goleak in TestMain checks no goroutine is
// left).
func TestAskStreamClientDisconnect(t *testing.T) {
	upstreamDone := make(chan struct{}, 4)
	h := newHarness(t, harnessOptions{
		upstream: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(w, r)
				if r.URL.Path == "/v1/chat/completions" {
					upstreamDone <- struct{}{}
				}
			})
		},
	})
	ts := httptest.NewServer(h.srv.Handler())
	t.Cleanup(ts.Close)
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStall, After: 2}) // then forever
	res := postStream(t, ts.URL+"/v1/ask/stream", `{"question":"How do I return an item?"}`)
	br := bufio.NewReader(res.Body)
	for deltas := 0; deltas < 2; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "event: delta\n" {
			deltas++
		}
	}
	_ = res.Body.Close()
	select {
	case <-upstreamDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request did not end")
	}
	ts.Close() // waits for the handler, and so for the question's end
	for _, s := range h.p.Breakers().Snapshots() {
		if s.Failures != 0 {
			t.Fatalf("breaker %s counted %d failures", s.Name, s.Failures)
		}
	}
	if st := h.up.Stats(modelFallback); st.Calls != 0 {
		t.Fatalf("the fallback was called %d times", st.Calls)
	}
}
