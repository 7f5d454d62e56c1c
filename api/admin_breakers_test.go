package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

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

// TestCooldownShownAndEndedByReset: a model cooling down after a 429 is
// listed in /v1/status until its Retry-After ends; resetting its breaker
// ("model/<id>") puts it back at once.
func TestCooldownShownAndEndedByReset(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: time.Hour})
	if a := h.ask("How long do refunds take?"); a.Source != tiers.SourceFallback {
		t.Fatalf("first answer from %s, want fallback", a.Source)
	}
	var st StatusResponse
	w := h.do(http.MethodGet, "/v1/status", "")
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != http.StatusOK {
		t.Fatalf("status: %d %v", w.Code, err)
	}
	if len(st.Cooldowns) != 1 || st.Cooldowns[0].Model != modelPrimary || time.Until(st.Cooldowns[0].Until) < 59*time.Minute {
		t.Fatalf("cooldowns %+v, want %s for about an hour", st.Cooldowns, modelPrimary)
	}
	h.up.SetFault(modelPrimary, llmtest.Fault{})
	calls := h.up.Stats(modelPrimary).Calls
	if a := h.ask("Is my parcel insured?"); a.Source == tiers.SourcePrimary || h.up.Stats(modelPrimary).Calls != calls {
		t.Fatalf("a model cooling down was called (answer from %s)", a.Source)
	}
	if w := h.do(http.MethodPost, "/v1/admin/breakers/reset", `{"breaker":"model/`+modelPrimary+`"}`); w.Code != http.StatusOK {
		t.Fatalf("reset: %d %s", w.Code, w.Body)
	}
	w = h.do(http.MethodGet, "/v1/status", "")
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || len(st.Cooldowns) != 0 {
		t.Fatalf("cooldowns after reset: %+v (%v)", st.Cooldowns, err)
	}
	if a := h.ask("Where is my order?"); a.Source != tiers.SourcePrimary {
		t.Fatalf("after reset the answer came from %s, want primary", a.Source)
	}
}
