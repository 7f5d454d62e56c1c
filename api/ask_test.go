package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

func TestAskShape(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	w := h.do(http.MethodPost, "/v1/ask", `{"tenant_id":"acme","session_id":"s1","question":"How do I return an item?"}`,
		HeaderRequestID, "req-123")
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if got := w.Header().Get(HeaderRequestID); got != "req-123" {
		t.Errorf("X-Request-Id = %q, want the incoming one", got)
	}
	// The body has exactly the documented fields.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"actions", "answer", "attempts", "degraded", "docs", "model", "note", "request_id", "source"}
	if !slices.Equal(keys, want) {
		t.Fatalf("fields %v, want %v", keys, want)
	}
	var a AskResponse
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if a.Source != tiers.SourcePrimary || a.Degraded || a.Model != modelPrimary || a.Note != "" ||
		a.Actions != (Actions{}) || a.RequestID != "req-123" {
		t.Fatalf("answer %+v", a)
	}
	if !strings.HasPrefix(a.Answer, "["+modelPrimary+"] ") {
		t.Errorf("answer %q does not come from the primary model", a.Answer)
	}
	if len(a.Docs) == 0 || a.Docs[0].ID != "returns-policy" || a.Docs[0].URL == "" || a.Docs[0].Score <= 0 {
		t.Errorf("docs %+v", a.Docs)
	}
	tiersSeen := attemptTiers(a.Attempts)
	if !slices.Equal(tiersSeen, []string{"cache:miss", "primary:success"}) {
		t.Errorf("attempts %v", tiersSeen)
	}
}

func attemptTiers(as []AttemptInfo) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Tier+":"+a.Outcome)
	}
	return out
}

// TestAskDegradation walks the chain down, one fault at a time, and checks
// the source, note and actions a frontend gets in each language.
func TestAskDegradation(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	fail := llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503}
	steps := []struct {
		name     string
		faults   []string // models failing
		trip     string   // a breaker to force open
		question string
		lang     string
		source   tiers.Source
		note     string
		actions  Actions
		model    string
	}{
		{"primary", nil, "", "How do I return an item?", "en", tiers.SourcePrimary, "", Actions{}, modelPrimary},
		{"cache", nil, "", "How do I return an item?", "en", tiers.SourceCache, "", Actions{}, modelPrimary},
		{"fallback", []string{modelPrimary}, "", "How long do refunds take?", "zh-CN",
			tiers.SourceFallback, "当前使用备用服务，回答质量可能略有下降。", Actions{Refresh: true}, modelFallback},
		{"retrieval", []string{modelPrimary, modelFallback}, "", "How long does shipping take?", "en",
			tiers.SourceRetrieval, "Automatic answers are temporarily unavailable; here are the most relevant knowledge-base articles.",
			Actions{RetryLater: true}, ""},
		{"static", []string{modelPrimary, modelFallback}, "tier/retrieval", "Is my parcel insured?", "zh",
			tiers.SourceStatic, "AI助手暂时无法回答，您可以联系人工客服。", Actions{CustomerService: true}, ""},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			h.t = t
			h.up.ClearFaults()
			for _, m := range st.faults {
				h.up.SetFault(m, fail)
			}
			if st.trip != "" {
				w := h.do(http.MethodPost, "/v1/admin/breakers/trip", `{"breaker":"`+st.trip+`"}`)
				if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"state":"open"`) {
					t.Fatalf("trip %s: %d %s", st.trip, w.Code, w.Body)
				}
			}
			a := h.ask(st.question, "Accept-Language", st.lang)
			if a.Source != st.source || a.Note != st.note || a.Actions != st.actions || a.Model != st.model {
				t.Fatalf("got source %s model %q note %q actions %+v; want %s %q %q %+v\nattempts %v",
					a.Source, a.Model, a.Note, a.Actions, st.source, st.model, st.note, st.actions, attemptTiers(a.Attempts))
			}
			if a.Degraded != (st.source != tiers.SourcePrimary && st.source != tiers.SourceCache) {
				t.Errorf("degraded = %v for %s", a.Degraded, a.Source)
			}
			if st.source == tiers.SourceRetrieval && len(a.Docs) == 0 {
				t.Error("a retrieval answer without docs")
			}
		})
	}
}

func TestAskTenants(t *testing.T) {
	t.Run("no keys", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		h.ask("How do I return an item?")
		if !strings.Contains(h.logs.String(), `"tenant":"default"`) {
			t.Errorf("tenant default not logged: %s", h.logs)
		}
		w := h.do(http.MethodPost, "/v1/ask", `{"tenant_id":"beta","question":"How do I return an item?"}`)
		var a AskResponse
		_ = json.Unmarshal(w.Body.Bytes(), &a)
		// Tenants never share cache entries: beta misses what default stored.
		if a.Source != tiers.SourcePrimary {
			t.Errorf("tenant beta got source %s; caches must be per tenant", a.Source)
		}
	})
	t.Run("keys", func(t *testing.T) {
		h := newHarness(t, harnessOptions{api: func(c *Config) { c.Keys = map[string]string{"sk-acme": "acme"} }})
		w := h.do(http.MethodPost, "/v1/ask", `{"tenant_id":"acme","question":"How do I return an item?"}`,
			"Authorization", "Bearer sk-acme")
		if w.Code != http.StatusOK {
			t.Fatalf("status %d %s", w.Code, w.Body)
		}
		w = h.do(http.MethodPost, "/v1/ask", `{"question":"How do I return an item?"}`, "Authorization", "bearer sk-acme")
		if w.Code != http.StatusOK {
			t.Fatalf("lower-case scheme: status %d %s", w.Code, w.Body)
		}
		if !strings.Contains(h.logs.String(), `"tenant":"acme"`) {
			t.Errorf("the key's tenant was not used: %s", h.logs)
		}
	})
}

// heapAfterGC returns the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestTenantFloodHeap guards the process against made-up tenants: 5,000
// distinct tenant_ids asking once each (no keys configured, so anyone may
// name one), each answer stored in the semantic cache, grow the heap after
// a collection by less than 30 MB.
func TestTenantFloodHeap(t *testing.T) {
	const tenants, budget = 5000, 30 << 20
	h := newHarness(t, harnessOptions{logTo: io.Discard})
	ask := func(tenant string) {
		w := h.do(http.MethodPost, "/v1/ask", `{"tenant_id":"`+tenant+`","question":"How do I return an item?"}`)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"source":"primary"`) {
			t.Fatalf("tenant %s: %d %s", tenant, w.Code, w.Body)
		}
	}
	for i := range 50 { // what every question shares: pools, metrics, the cache's planes
		ask(fmt.Sprintf("warm-%d", i))
	}
	before := heapAfterGC()
	for i := range tenants {
		ask(fmt.Sprintf("tenant-%05d", i))
	}
	after := heapAfterGC()
	growth := int64(after) - int64(before)
	t.Logf("%d tenants asking once: heap %+.1f MB, %.0f bytes per tenant", tenants, float64(growth)/(1<<20), float64(growth)/tenants)
	if growth >= budget {
		t.Errorf("heap grew by %.1f MB for %d tenants, want < 30 MB", float64(growth)/(1<<20), tenants)
	}
	if n := h.p.TenantCaches("tenant-00042"); len(n) != 1 || n[0].Entries != 1 {
		t.Errorf("tenant-00042's cache figures %+v, want its one entry", n)
	}
}
