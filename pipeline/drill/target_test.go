package drill

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/api"
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
	if s.BySource["fallback"] != tenants["up"] || s.BySource[sourceError] != tenants["down"] {
		t.Errorf("by source %v, want fallback %d and not answered %d", s.BySource, tenants["up"], tenants["down"])
	}
}
