package api

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// streamAll posts a streamed question to path and reads the whole answer.
func streamAll(t *testing.T, url, path, body string) string {
	t.Helper()
	res := postStream(t, url+path, body)
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %v", path, res.StatusCode, err)
	}
	return string(b)
}

// scrape returns the /metrics page, failing the test if it lacks a line
// of want.
func scrape(t *testing.T, h *harness, want ...string) {
	t.Helper()
	body := h.do(http.MethodGet, "/metrics", "").Body.String()
	for _, w := range want {
		if !strings.Contains(body, w+"\n") {
			t.Errorf("metrics lack %s", w)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

func TestStreamMetrics(t *testing.T) {
	h, ts := streamHarness(t, nil, time.Hour)
	// A whole answer, on each streaming route.
	streamAll(t, ts.URL, "/v1/ask/stream", `{"question":"How do I return an item?"}`)
	streamAll(t, ts.URL, "/v1/chat/completions",
		`{"stream":true,"messages":[{"role":"user","content":"How long do refunds take?"}]}`)
	// An interrupted one.
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeBreak, After: 3})
	if b := streamAll(t, ts.URL, "/v1/ask/stream", `{"question":"How fast is shipping?"}`); !strings.Contains(b, `"interrupted":true`) {
		t.Fatalf("not interrupted: %s", b)
	}
	// A hung primary: the first delta comes from the fallback, after the
	// first-token timeout (100ms), which the time to first delta includes.
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeHang})
	streamAll(t, ts.URL, "/v1/ask/stream", `{"question":"Can I change my shipping address?"}`)
	scrape(t, h,
		`ragfuse_streams_total{interrupted="false",source="primary"} 2`,
		`ragfuse_streams_total{interrupted="true",source="primary"} 1`,
		`ragfuse_streams_total{interrupted="false",source="fallback"} 1`,
		`ragfuse_stream_first_delta_seconds_count{source="primary"} 3`,
		`ragfuse_stream_first_delta_seconds_count{source="fallback"} 1`,
		`ragfuse_stream_first_delta_seconds_bucket{source="fallback",le="0.05"} 0`,
		`ragfuse_stream_continued_total 0`,
		`ragfuse_questions_total{source="primary"} 3`,
	)
}

func TestStreamMetricsContinued(t *testing.T) {
	h, ts := streamHarness(t, func(tc *config.Tier) { tc.LLM.OnStreamBreak = "continue" }, time.Hour)
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeBreak, After: 3})
	if b := streamAll(t, ts.URL, "/v1/ask/stream", `{"question":"How do I return an item?"}`); !strings.Contains(b, `"continued":true`) {
		t.Fatalf("not continued: %s", b)
	}
	scrape(t, h,
		`ragfuse_streams_total{interrupted="false",source="fallback"} 1`,
		`ragfuse_stream_first_delta_seconds_count{source="primary"} 1`,
		`ragfuse_stream_continued_total 1`,
	)
	body := h.do(http.MethodGet, "/metrics", "").Body.String()
	if strings.Contains(body, `ragfuse_stream_first_delta_seconds_count{source="fallback"}`) {
		t.Error("the continuation counted as a first delta")
	}
}
