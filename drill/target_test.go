package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/api"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// TestRunTarget drives a server's POST /v1/ask: every question is sent as
// the API's request, with the scenario's tenants in turn and a session of
// its own, and the report counts the answers by the source the server
// names, a failed request as not answered.
func TestRunTarget(t *testing.T) {
	var mu sync.Mutex
	sessions := map[string]bool{}
	tenants := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.AskRequest
		if r.URL.Path != "/v1/ask" || r.Header.Get("Content-Type") != "application/json" ||
			json.NewDecoder(r.Body).Decode(&req) != nil || req.Question == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		dup := sessions[req.SessionID]
		sessions[req.SessionID] = true
		tenants[req.TenantID]++
		mu.Unlock()
		if dup || req.TenantID == "down" {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(api.AskResponse{Answer: "a", Source: "fallback"})
	}))
	defer srv.Close()

	sc, err := LoadScenario(filepath.Join(scenarioDir, "primary-outage.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	qpath := filepath.Join(t.TempDir(), "questions.jsonl")
	if err := os.WriteFile(qpath, []byte(`{"question":"one"}`+"\n"+`{"question":"two"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc.Questions, sc.Tenants = qpath, []string{"up", "down"}
	sc.Load = Load{Rate: 20, Duration: 2 * time.Second} // 40 questions in a quarter second
	rep, err := Run(context.Background(), Options{Scenario: sc, Speed: 8, Target: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Settings) != 1 || rep.Settings[0].Setting != SettingTarget {
		t.Fatalf("settings = %+v, want the target alone", rep.Settings)
	}
	s := rep.Settings[0]
	mu.Lock()
	defer mu.Unlock()
	if len(sessions) != s.Questions || s.Questions < 10 {
		t.Fatalf("%d questions reported, %d sessions seen by the server", s.Questions, len(sessions))
	}
	// Two questions a round, so the tenants take turns by twos.
	if tenants["up"] == 0 || tenants["down"] == 0 || len(tenants) != 2 {
		t.Errorf("tenants seen = %v, want up and down", tenants)
	}
	if s.BySource["fallback"] != tenants["up"] || s.BySource[sourceError] != tenants["down"] || s.Errors["HTTP 503"] != tenants["down"] {
		t.Errorf("by source %v, errors %v, want fallback %d and not answered (HTTP 503) %d", s.BySource, s.Errors, tenants["up"], tenants["down"])
	}
}

// askServer is a stand-in for a ragfuse server: answer decides the status
// of each POST /v1/ask (200 answers from the fallback).
func askServer(t *testing.T, answer func(r *http.Request, req api.AskRequest) int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.AskRequest
		if r.URL.Path != "/v1/ask" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if code := answer(r, req); code != http.StatusOK {
			http.Error(w, "no", code)
			return
		}
		_ = json.NewEncoder(w).Encode(api.AskResponse{Answer: "a", Source: "fallback"})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// targetScenario is primary-outage cut to 2s with the primary failing from
// 1s, 40 questions in a quarter second at speed 8.
func targetScenario(t *testing.T) *Scenario {
	t.Helper()
	sc, err := LoadScenario(filepath.Join(scenarioDir, "primary-outage.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sc.Load = Load{Rate: 20, Duration: 2 * time.Second}
	sc.Faults["primary-llm"] = []Step{{At: 0, Mode: llmtest.ModeOK}, {At: time.Second, Mode: llmtest.ModeHang}}
	return sc
}

func markdown(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRunTargetReportsOnlyWhatItMeasures: over HTTP no fault is injected
// and nothing behind the server is seen, so the report names no failing
// window, takes no latency while failing, and marks the model and breaker
// figures and goals n/a instead of reporting them met or missed on zeros.
func TestRunTargetReportsOnlyWhatItMeasures(t *testing.T) {
	srv := askServer(t, func(*http.Request, api.AskRequest) int { return http.StatusOK })
	rep, err := Run(context.Background(), Options{Scenario: targetScenario(t), Speed: 8, Target: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Settings[0]
	if len(rep.Faults) != 0 || s.FaultLatency.N != 0 {
		t.Errorf("faults %+v, %d questions timed while failing: over HTTP nothing fails on the drill's account", rep.Faults, s.FaultLatency.N)
	}
	for _, g := range s.Goals {
		if g.Name != "availability (model or cache)" && g.Met {
			t.Errorf("goal %q met over HTTP: %+v", g.Name, g)
		}
	}
	md := markdown(t, rep)
	for _, bad := range []string{"Failing:", "missed", "met: 0", "<= 0", "| never opened |", "| 0 of 0 (0.00%) |"} {
		if strings.Contains(md, bad) {
			t.Errorf("report over HTTP contains %q:\n%s", bad, md)
		}
	}
	for _, want := range []string{
		"| calls to failing models | n/a (not measured over HTTP) |",
		"| calls to a failing model per open period | <= failure_threshold + half_open_max_calls | n/a (not measured over HTTP) |",
		"| tokens sent to failing models | <= 1.00% | n/a (not measured over HTTP) |",
		"| availability (model or cache) | >= 99.90% | met: 100.00% |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report over HTTP lacks %q:\n%s", want, md)
		}
	}
}

// TestRunTargetCountsFailuresByStatus: a server that refuses every request
// (here for want of an API key) shows in the report as the HTTP status of
// its answers and a warning that every question failed, not as a bare
// availability of 0%.
func TestRunTargetCountsFailuresByStatus(t *testing.T) {
	srv := askServer(t, func(r *http.Request, _ api.AskRequest) int {
		if r.Header.Get("Authorization") == "" {
			return http.StatusUnauthorized
		}
		return http.StatusOK
	})
	rep, err := Run(context.Background(), Options{Scenario: targetScenario(t), Speed: 8, Target: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	n := rep.Settings[0].Questions
	md := markdown(t, rep)
	for _, want := range []string{
		fmt.Sprintf("| not answered: HTTP 401 | %d |", n),
		fmt.Sprintf("every one of the %d questions failed (HTTP 401: %d)", n, n),
	} {
		if n == 0 || !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestRunTargetAPIKey: with an API key the drill sends it as a bearer
// token and lets it decide the tenant (a tenant_id that differs from the
// key's is a 403), and the key appears nowhere in the report.
func TestRunTargetAPIKey(t *testing.T) {
	const key = "sk-drill-0123456789"
	var mu sync.Mutex
	tenants := map[string]int{}
	srv := askServer(t, func(r *http.Request, req api.AskRequest) int {
		mu.Lock()
		tenants[req.TenantID]++
		mu.Unlock()
		switch {
		case r.Header.Get("Authorization") != "Bearer "+key:
			return http.StatusUnauthorized
		case req.TenantID != "" && req.TenantID != "acme":
			return http.StatusForbidden
		}
		return http.StatusOK
	})
	sc := targetScenario(t)
	rep, err := Run(context.Background(), Options{Scenario: sc, Speed: 8, Target: srv.URL, APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Settings[0]
	if s.Questions == 0 || s.BySource["fallback"] != s.Questions || len(s.Errors) != 0 {
		t.Errorf("by source %v, errors %v: want every question answered", s.BySource, s.Errors)
	}
	mu.Lock()
	if len(tenants) != 1 || tenants[""] == 0 {
		t.Errorf("tenant_id sent %v, want none with a key", tenants)
	}
	mu.Unlock()
	var js bytes.Buffer
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js.String(), key) || strings.Contains(markdown(t, rep), key) {
		t.Error("the API key is written in the report")
	}
	if _, err := Run(context.Background(), Options{Scenario: sc, APIKey: key}); err == nil {
		t.Error("an API key without a target was accepted")
	}
}
