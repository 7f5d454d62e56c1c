package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// brokenWriter is a ResponseWriter whose connection breaks after the
// headers: every body write fails, as on a client that went away.
type brokenWriter struct{ *httptest.ResponseRecorder }

func (w brokenWriter) Write([]byte) (int, error) { return 0, errors.New("write: broken pipe") }

// questionLog returns the "question …" log line of request id, or nil.
func questionLog(h *harness, id string) map[string]any {
	var found map[string]any
	for _, l := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(l, `"request_id":"`+id+`"`) && strings.Contains(l, `"msg":"question `) {
			_ = json.Unmarshal([]byte(l), &found)
		}
	}
	return found
}

// TestAskStreamBrokenClientIsLogged: a streamed question whose client is
// gone when the answer is written still gets its one log line, as a
// /v1/ask question does.
func TestAskStreamBrokenClientIsLogged(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, path := range []string{"/v1/ask/stream", "/v1/chat/completions"} {
		id := "gone" + strings.ReplaceAll(path, "/", "-")
		body := `{"question":"How do I return an item?"}`
		if path == "/v1/chat/completions" {
			body = `{"stream":true,"messages":[{"role":"user","content":"How do I return an item?"}]}`
		}
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderRequestID, id)
		h.srv.Handler().ServeHTTP(brokenWriter{httptest.NewRecorder()}, req)
		if questionLog(h, id) == nil {
			t.Errorf("%s: no log line for the question:\n%s", path, h.logs.String())
		}
	}
}

// panickyMemory is a cache-like tier that never answers and panics when
// it is told an answer.
type panickyMemory struct{}

func (panickyMemory) Name() string         { return "memory" }
func (panickyMemory) Source() tiers.Source { return tiers.SourceCache }
func (panickyMemory) Answer(context.Context, tiers.Query) (tiers.Answer, error) {
	return tiers.Answer{}, &tiers.Error{Kind: tiers.KindMiss, Tier: "memory", Err: errors.New("miss")}
}
func (panickyMemory) Remember(context.Context, tiers.Query, tiers.Answer) { panic("remember exploded") }

// TestStreamPanicRecovered: a panic while a streamed question runs is
// recovered and logged like one in /v1/ask, and the stream ends with an
// error event, instead of taking the process down.
func TestStreamPanicRecovered(t *testing.T) {
	logs := &syncBuffer{}
	srv := libraryHarness(t, pipeline.Options{Tiers: []pipeline.Stage{
		{Tier: panickyMemory{}},
		{Tier: tiers.NewStatic("static", "Sorry.")},
	}}, Config{Logger: slog.New(slog.NewJSONHandler(logs, nil))}).srv
	// /v1/ask: the pipeline turns the panic into an error.
	req := httptest.NewRequest(http.MethodPost, "/v1/ask", strings.NewReader(`{"question":"hello"}`))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("/v1/ask: %d %s", w.Code, w.Body)
	}

	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	res := postStream(t, ts.URL+"/v1/ask/stream", `{"question":"hello"}`, HeaderRequestID, "boom-1")
	evs := readSSE(t, res.Body)
	if len(evs) == 0 || evs[len(evs)-1].Name != "error" {
		t.Fatalf("stream %+v, want it to end with an error event", evs)
	}
	var b errorBody
	if err := json.Unmarshal([]byte(evs[len(evs)-1].Data), &b); err != nil || b.Error.Code != CodeInternal {
		t.Fatalf("error event %s", evs[len(evs)-1].Data)
	}
	if l := logs.String(); !strings.Contains(l, "remember exploded") || !strings.Contains(l, "boom-1") {
		t.Fatalf("the panic is not logged with its request id:\n%s", l)
	}
}

// steadyTier streams n deltas, one every gap.
type steadyTier struct {
	n   int
	gap time.Duration
}

func (steadyTier) Name() string         { return "steady" }
func (steadyTier) Source() tiers.Source { return tiers.SourcePrimary }
func (t steadyTier) Answer(ctx context.Context, q tiers.Query) (tiers.Answer, error) {
	return t.AnswerStream(ctx, q, tiers.StreamRequest{Emit: func(tiers.Delta) error { return nil }})
}
func (t steadyTier) AnswerStream(ctx context.Context, _ tiers.Query, r tiers.StreamRequest) (tiers.Answer, error) {
	var b strings.Builder
	for i := 0; i < t.n; i++ {
		if i > 0 {
			select {
			case <-time.After(t.gap):
			case <-ctx.Done():
				return tiers.Answer{}, ctx.Err()
			}
		}
		if err := r.Emit(tiers.Delta{Model: "steady", Text: "w "}); err != nil {
			return tiers.Answer{}, err
		}
		b.WriteString("w ")
	}
	return tiers.Answer{Text: b.String(), Model: "steady"}, nil
}

// TestHeartbeatOnlyWhenIdle: ": ping" comes while nothing else is sent
// (README, Config.StreamHeartbeat), not in the middle of a steady stream
// of deltas. The stream lasts at least 4.8 heartbeats (400 gaps of at
// least 3 ms), so pings on a fixed schedule would be 4 or more; one is
// allowed for a stall of a whole heartbeat on a loaded machine.
func TestHeartbeatOnlyWhenIdle(t *testing.T) {
	const heartbeat = 250 * time.Millisecond
	h := libraryHarness(t, pipeline.Options{Tiers: []pipeline.Stage{
		{Tier: steadyTier{n: 401, gap: 3 * time.Millisecond}, Model: true},
		{Tier: tiers.NewStatic("static", "Sorry.")},
	}}, Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), StreamHeartbeat: heartbeat})
	ts := httptest.NewServer(h.srv.Handler())
	t.Cleanup(ts.Close)
	evs := readSSE(t, postStream(t, ts.URL+"/v1/ask/stream", `{"question":"hello"}`).Body)
	pings := 0
	for _, e := range evs {
		if e.Comment {
			pings++
		}
	}
	if pings > 1 || names(evs) != "meta delta done" {
		t.Fatalf("%d pings in a stream that never paused: %s", pings, names(evs))
	}
}
