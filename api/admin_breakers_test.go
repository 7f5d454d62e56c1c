package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// TestTripStaticBreakerRefused: the static tier is the answer of last
// resort ("503 exhausted: only without a static tier"), so the admin
// route must not take it out of the chain; questions must keep getting
// the static message when every other tier is down.
func TestTripStaticBreakerRefused(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	w := h.do(http.MethodPost, "/v1/admin/breakers/trip", `{"breaker":"tier/static"}`)
	if w.Code != http.StatusBadRequest {
		t.Errorf("trip tier/static: %d %s, want 400", w.Code, w.Body)
	} else if b := decodeError(t, w); b.Error.Code != CodeBadRequest {
		t.Errorf("code %s", b.Error.Code)
	}
	if b, _ := h.p.Breakers().Lookup("tier/static"); b != nil && b.Snapshot().State.String() != "closed" {
		t.Errorf("tier/static is %s after a refused trip", b.Snapshot().State)
	}
	// Every other tier down: the static tier still answers.
	fail := llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503}
	h.up.SetFault(modelPrimary, fail)
	h.up.SetFault(modelFallback, fail)
	if w := h.do(http.MethodPost, "/v1/admin/breakers/trip", `{"breaker":"tier/retrieval"}`); w.Code != http.StatusOK {
		t.Fatalf("trip tier/retrieval: %d %s", w.Code, w.Body)
	}
	w = h.do(http.MethodPost, "/v1/ask", `{"question":"Is my parcel insured?"}`)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"source":"`+string(tiers.SourceStatic)+`"`) {
		t.Fatalf("ask: %d %s, want a static answer", w.Code, w.Body)
	}
	// Resetting it stays allowed.
	if w := h.do(http.MethodPost, "/v1/admin/breakers/reset", `{"breaker":"tier/static"}`); w.Code != http.StatusOK {
		t.Errorf("reset tier/static: %d %s", w.Code, w.Body)
	}
}
