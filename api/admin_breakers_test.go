package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/config"
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

// logLines returns the JSON log lines of h whose msg is msg.
func logLines(t *testing.T, h *harness, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(h.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestTripReason: after two failing calls the primary model's breaker is
// open, and /v1/status and the transition's log line say why: the rule,
// the outcome kind and the attempt's description. A refused key (401)
// also logs a warning naming the model and its api_key_env.
func TestTripReason(t *testing.T) {
	for _, tc := range []struct {
		name          string
		fault         llmtest.Fault
		kind, message string // message: the whole, or with a leading * its end
	}{
		{"500s", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500}, "server_error", "HTTP 500"},
		{"hang", llmtest.Fault{Mode: llmtest.ModeHang}, "timeout", "*/v1/chat/completions: context deadline exceeded"},
		{"401s", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 401}, "auth", "HTTP 401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{
				config: func(c *config.Config) {
					c.Tiers[1].Breaker = &config.Breaker{FailureThreshold: 2}
					c.Tiers[1].Timeout = 200 * time.Millisecond
				},
				api: func(c *Config) { c.APIKeyEnvs = map[string]string{modelPrimary: "TEST_PRIMARY_KEY"} },
			})
			h.up.SetFault(modelPrimary, tc.fault)
			h.ask("How do I return an item?")
			h.ask("How long do refunds take?")
			var got *TripInfo
			for _, b := range statusOf(t, h).Breakers {
				if b.Name == "model/"+modelPrimary {
					if b.State != "open" {
						t.Fatalf("%s is %s, want open", b.Name, b.State)
					}
					got = b.LastTrip
				}
			}
			matches := func(m any) bool {
				s, _ := m.(string)
				end, ok := strings.CutPrefix(tc.message, "*")
				return s == tc.message || ok && strings.HasPrefix(s, "Post http://127.0.0.1:") && strings.HasSuffix(s, end)
			}
			if got == nil || got.Cause != "consecutive_failures" || got.Kind != tc.kind || !matches(got.Message) ||
				time.Since(got.At) > time.Minute {
				t.Fatalf("last_trip %+v, want consecutive_failures, %s, %q", got, tc.kind, tc.message)
			}
			opened := 0
			for _, l := range logLines(t, h, "breaker state changed") {
				if l["breaker"] == "model/"+modelPrimary && l["to"] == "open" {
					opened++
					if l["level"] != "WARN" || l["cause"] != "consecutive_failures" || l["kind"] != tc.kind || !matches(l["reason"]) {
						t.Errorf("transition line %v", l)
					}
				}
			}
			if opened != 1 {
				t.Errorf("%d transition lines to open, want 1", opened)
			}
			refused := logLines(t, h, "model refused the API key")
			if tc.kind != "auth" {
				if len(refused) != 0 {
					t.Errorf("a refused-key warning after %s: %v", tc.name, refused)
				}
				return
			}
			if len(refused) != 1 || refused[0]["level"] != "WARN" || refused[0]["model"] != modelPrimary ||
				refused[0]["api_key_env"] != "TEST_PRIMARY_KEY" || refused[0]["reason"] != "HTTP 401" {
				t.Errorf("refused-key warnings %v, want one naming %s and TEST_PRIMARY_KEY", refused, modelPrimary)
			}
			scrape(t, h, `ragfuse_attempts_total{model="test-primary",outcome="auth",tier="primary"} 2`)
		})
	}
}

// TestResetEveryBreaker: {"breaker": "*"} closes every breaker and ends
// every cooldown, and answers with each breaker's state.
func TestResetEveryBreaker(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: time.Hour})
	h.ask("How long do refunds take?")
	for _, name := range []string{"tier/retrieval", "model/" + modelFallback} {
		if w := h.do(http.MethodPost, "/v1/admin/breakers/trip", `{"breaker":"`+name+`"}`); w.Code != http.StatusOK {
			t.Fatalf("trip %s: %d %s", name, w.Code, w.Body)
		}
	}
	w := h.do(http.MethodPost, "/v1/admin/breakers/reset", `{"breaker":"*"}`)
	var body struct{ Breakers []BreakerInfo }
	if err := json.Unmarshal(w.Body.Bytes(), &body); w.Code != http.StatusOK || err != nil {
		t.Fatalf("reset *: %d %s", w.Code, w.Body)
	}
	st := statusOf(t, h)
	if len(body.Breakers) != len(st.Breakers) {
		t.Errorf("reset answered %d breakers, status lists %d", len(body.Breakers), len(st.Breakers))
	}
	for _, b := range append(body.Breakers, st.Breakers...) {
		if b.State != "closed" {
			t.Errorf("%s is %s after reset *", b.Name, b.State)
		}
	}
	if len(st.Cooldowns) != 0 {
		t.Errorf("cooldowns %+v after reset *", st.Cooldowns)
	}
	// "*" names every breaker only in a reset.
	if w := h.do(http.MethodPost, "/v1/admin/breakers/trip", `{"breaker":"*"}`); w.Code != http.StatusNotFound {
		t.Errorf("trip *: %d %s, want 404", w.Code, w.Body)
	}
}
