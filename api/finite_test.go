package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
)

// scoreRetriever is an application's own retriever that scores every
// document score.
type scoreRetriever struct{ score float64 }

func (r scoreRetriever) Retrieve(context.Context, string, int) ([]retrieval.Doc, error) {
	d := testDocs[0]
	d.Score = r.score
	return []retrieval.Doc{d}, nil
}

// scoreServer serves a pipeline whose retrieval tier scores its document
// score, over HTTP.
func scoreServer(t *testing.T, score float64) (*harness, *httptest.Server) {
	t.Helper()
	h := libraryHarness(t, pipeline.Options{Tiers: []pipeline.Stage{
		{Tier: tiers.NewRetrieval(tiers.RetrievalConfig{Retriever: scoreRetriever{score}})},
		{Tier: tiers.NewStatic("static", "")},
	}}, Config{})
	ts := httptest.NewServer(h.srv.Handler())
	t.Cleanup(ts.Close)
	return h, ts
}

// TestHugeScoreIsAnswered: a finite score too large to round (1e307 from
// an application's own retriever) is an answer on every route, with the
// score as it came, not a 500 or a stream that stops without its end.
func TestHugeScoreIsAnswered(t *testing.T) {
	const question = "How do I return an item?"
	h, ts := scoreServer(t, 1e307)
	t.Run("ask", func(t *testing.T) {
		h.t = t
		if a := h.ask(question); len(a.Docs) != 1 || a.Docs[0].Score != 1e307 {
			t.Fatalf("docs %+v, want one scored 1e307", a.Docs)
		}
	})
	t.Run("ask stream", func(t *testing.T) {
		evs := readSSE(t, postStream(t, ts.URL+"/v1/ask/stream", `{"question":"`+question+`"}`).Body)
		if got := names(evs); got != "meta note delta done" {
			t.Fatalf("events %q: %+v", got, evs)
		}
		var done StreamDoneData
		if err := json.Unmarshal([]byte(firstEvent(evs, "done").Data), &done); err != nil ||
			len(done.Docs) != 1 || done.Docs[0].Score != 1e307 {
			t.Fatalf("done %s (%v)", firstEvent(evs, "done").Data, err)
		}
	})
	t.Run("chat stream", func(t *testing.T) {
		evs := readSSE(t, postStream(t, ts.URL+"/v1/chat/completions",
			`{"stream":true,"messages":[{"role":"user","content":"`+question+`"}]}`).Body)
		if len(evs) < 2 || evs[len(evs)-1].Data != "[DONE]" {
			t.Fatalf("events %+v, want them to end with [DONE]", evs)
		}
		var last ChatCompletionChunk
		if err := json.Unmarshal([]byte(evs[len(evs)-2].Data), &last); err != nil || last.Ragfuse == nil ||
			len(last.Ragfuse.Docs) != 1 || last.Ragfuse.Docs[0].Score != 1e307 {
			t.Fatalf("last chunk %s (%v)", evs[len(evs)-2].Data, err)
		}
	})
}

func TestRoundScoreIsFinite(t *testing.T) {
	for in, want := range map[float64]float64{
		0.71749:          0.717,
		-2.5004:          -2.5,
		1e307:            1e307,
		-math.MaxFloat64: -math.MaxFloat64,
		math.Inf(1):      0,
		math.Inf(-1):     0,
	} {
		if got := roundScore(in); got != want {
			t.Errorf("roundScore(%g) = %g, want %g", in, got, want)
		}
	}
	if got := roundScore(math.NaN()); got != 0 {
		t.Errorf("roundScore(NaN) = %g, want 0", got)
	}
}

// unencodableSink sends every event as an empty object but those of kind
// bad, whose data JSON cannot encode.
type unencodableSink struct {
	w   *streamWriter
	bad pipeline.StreamEventKind
}

func (k unencodableSink) event(e pipeline.StreamEvent) error {
	if e.Kind == k.bad {
		return k.w.event("bad", math.Inf(1))
	}
	return k.w.event("event", struct{}{})
}

func (k unencodableSink) failed(err error) error {
	return k.w.event("error", streamErrorBody(err, "req-1"))
}

// TestStreamEncodingErrorIsAnErrorEvent: an event that cannot be encoded
// is a failure on the server's side, not a client that went away: the
// stream ends with an internal error event (or, before anything was sent,
// serveStream returns an internal error for the JSON response), and the
// question is logged as failed.
func TestStreamEncodingErrorIsAnErrorEvent(t *testing.T) {
	logs := &syncBuffer{}
	srv := libraryHarness(t, pipeline.Options{Tiers: []pipeline.Stage{
		{Tier: tiers.NewRetrieval(tiers.RetrievalConfig{Retriever: ownRetriever{}})},
	}}, Config{Logger: slog.New(slog.NewJSONHandler(logs, nil))}).srv
	serve := func(bad pipeline.StreamEventKind) (*httptest.ResponseRecorder, error) {
		rec := httptest.NewRecorder()
		c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/v1/ask/stream", nil), rec)
		w := newStreamWriter(c)
		q := tiers.Query{Tenant: "default", Question: "How do I return an item?"}
		return rec, srv.serveStream(c, q, w, unencodableSink{w: w, bad: bad})
	}

	rec, err := serve(pipeline.StreamDone)
	if err != nil {
		t.Fatalf("serveStream: %v", err)
	}
	evs := readSSE(t, rec.Body)
	if len(evs) == 0 || evs[len(evs)-1].Name != "error" {
		t.Fatalf("stream %+v, want it to end with an error event", evs)
	}
	var b errorBody
	if err := json.Unmarshal([]byte(evs[len(evs)-1].Data), &b); err != nil || b.Error.Code != CodeInternal {
		t.Fatalf("error event %s", evs[len(evs)-1].Data)
	}
	if l := logs.String(); !strings.Contains(l, `"msg":"question failed"`) || !strings.Contains(l, `"error":"internal"`) {
		t.Fatalf("the question is not logged as failed:\n%s", l)
	}

	rec, err = serve(pipeline.StreamMeta)
	if err == nil || errorStatus(err).Code != CodeInternal || rec.Body.Len() != 0 {
		t.Fatalf("unencodable first event: err %v, body %q; want an internal error and nothing sent", err, rec.Body)
	}
}

// TestStatusNonFiniteRateIsZero: a rate limit that is not a number JSON
// can carry (a pipeline built as a library skips config validation) is
// reported as 0 by /v1/status, not a 500.
func TestStatusNonFiniteRateIsZero(t *testing.T) {
	h := libraryHarness(t, pipeline.Options{
		Tiers:     []pipeline.Stage{{Tier: tiers.NewStatic("static", "")}},
		RateLimit: pipeline.RateLimitConfig{GlobalRPS: math.Inf(1), TenantRPS: math.NaN()},
	}, Config{})
	w := h.do(http.MethodGet, "/v1/status", "")
	if w.Code != http.StatusOK {
		t.Fatalf("status: %d %s", w.Code, w.Body)
	}
	var st StatusResponse
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.RateLimit.GlobalRPS != 0 || st.RateLimit.TenantRPS != 0 {
		t.Fatalf("rate limit %+v, want rates 0", st.RateLimit)
	}
}
