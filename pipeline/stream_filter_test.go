package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/ragfuse/ragfuse/tiers"
)

// filteredMidStream answers model a's streamed calls with three chunks of
// text and then a stop for content_filter, as a provider whose filter
// flags an answer part-way does; other calls go on to next.
func filteredMidStream(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil || !bytes.Contains(body, []byte(`"model":"`+streamA+`"`)) {
			req.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, req)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := `data: {"id":"f","object":"chat.completion.chunk","model":"` + streamA + `","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}` + "\n\n"
		for _, text := range []string{`"Items "`, `"can be "`, `"returned "`} {
			fmt.Fprintf(w, chunk, `{"content":`+text+`}`, "null")
		}
		fmt.Fprintf(w, chunk, `{}`, `"content_filter"`)
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
}

// TestStreamContentFilterAfterCommitIsNotContinued: a model that stops for
// its content filter after part of the answer was sent refused the
// content, it did not break. The answer ends there with the interruption
// note, even with on_stream_break: continue: handing the flagged text to
// the next model to carry on would get round the filter. Like a content
// filter before commit, it does not count against the model's breaker.
func TestStreamContentFilterAfterCommitIsNotContinued(t *testing.T) {
	r := newStreamRig(t, StreamConfig{StallTimeout: streamWait, OnStreamBreak: OnStreamBreakContinue}, filteredMidStream)
	var ev events
	res, err := r.p.Stream(context.Background(), streamQuery(), ev.add)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ev.summary(), "meta(primary/a) delta×3 note done(primary,interrupted)"; got != want {
		t.Fatalf("events %s, want %s (attempts %v)", got, want, outcomes(res))
	}
	if res.Text != "Items can be returned " || !res.Interrupted || res.Source != tiers.SourcePrimary {
		t.Errorf("result %q from %s, interrupted %v", res.Text, res.Source, res.Interrupted)
	}
	if got, want := outcomes(res), []string{"cache:miss", "primary/a:content_filter"}; !slices.Equal(got, want) {
		t.Errorf("attempts %v, want %v", got, want)
	}
	if n := r.srv.Stats(streamB).StreamCalls; n != 0 {
		t.Errorf("the fallback model was asked %d times to continue a filtered answer", n)
	}
	if got := r.modelCounts(streamA); got != "0/0" {
		t.Errorf("model/a breaker counts %s, want 0/0 (a content filter is ignored)", got)
	}
}
