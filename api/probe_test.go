package api

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// TestProbeMetricsLogsAndStatus: a probed model's failed and successful
// probes are counted in ragfuse_probes_total, logged when they change its
// breaker's state, and shown in /v1/status.
func TestProbeMetricsLogsAndStatus(t *testing.T) {
	h := newHarness(t, harnessOptions{config: func(c *config.Config) {
		m := c.Models[modelPrimary]
		m.Probe = &config.Probe{Interval: 50 * time.Millisecond, Timeout: 50 * time.Millisecond}
		c.Models[modelPrimary] = m
		c.Tiers[1].Breaker = &config.Breaker{FailureThreshold: 1000, OpenDuration: 100 * time.Millisecond}
	}})
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503})
	b := h.p.Breakers().Get("model/" + modelPrimary)
	b.Trip()
	deadline := time.Now().Add(5 * time.Second)
	for b.Snapshot().LastTrip.Cause != breaker.CauseProbeFailed {
		if time.Now().After(deadline) {
			t.Fatal("no failed probe within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.up.ClearFault(modelPrimary)
	for b.State() != breaker.StateClosed {
		if time.Now().After(deadline) {
			t.Fatal("no successful probe within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// How many probes failed depends on timing (another may fail before
	// the fault is cleared): at least one; one success closes the breaker.
	scrape(t, h, `ragfuse_probes_total{model="test-primary",outcome="success"} 1`)
	failed := counterValue(t, h, `ragfuse_probes_total{model="test-primary",outcome="server_error"}`)
	if failed < 1 {
		t.Fatalf("%d failed probes counted, want at least 1", failed)
	}
	var warned, closed int
	for _, l := range logLines(t, h, "model probe") {
		switch {
		case l["level"] == "WARN" && l["to"] == "open" && l["outcome"] == "server_error" && l["reason"] == "HTTP 503":
			warned++
		case l["level"] == "INFO" && l["to"] == "closed" && l["outcome"] == "success":
			closed++
		default:
			t.Errorf("unexpected probe log line %v", l)
		}
	}
	if warned != failed || closed != 1 {
		t.Fatalf("probe log lines: %d failed, %d closed; want %d and 1", warned, closed, failed)
	}
	st := statusOf(t, h).Probes
	if len(st) != 1 || st[0].Model != modelPrimary || st[0].IntervalMS != 50 || st[0].TimeoutMS != 50 ||
		st[0].Probes != uint64(failed)+1 || st[0].LastOutcome != "success" || st[0].LastProbeAt == nil {
		t.Fatalf("status probes = %+v", st)
	}
}

// counterValue returns the value of the metric series named (with its
// labels) series in /metrics, failing if it is missing.
func counterValue(t *testing.T, h *harness, series string) int {
	t.Helper()
	body := h.do(http.MethodGet, "/metrics", "").Body.String()
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("metric %s = %q: %v", series, v, err)
			}
			return n
		}
	}
	t.Fatalf("metrics lack %s", series)
	return 0
}
