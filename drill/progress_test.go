package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/api"
	"github.com/ragfuse/ragfuse/breaker"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestProgressLine(t *testing.T) {
	reg := breaker.NewRegistry(breaker.Config{})
	reg.Get("tier/primary")
	reg.Get("model/p1").Trip()
	var b bytes.Buffer
	sc := &Scenario{Name: "outage", Load: Load{Warmup: 5 * time.Second, Duration: 60 * time.Second}}
	p := newProgress(Options{Scenario: sc, Progress: &b}, SettingBreaker, 1, 3, 10)
	start := time.Now()
	p.start, p.breakers = start, reg.Snapshots
	ask := p.counting(func(_ context.Context, i int) outcome {
		return []outcome{{source: "fallback"}, {source: "primary"}, {source: sourceError, cause: "HTTP 503"}, {source: "fallback"}}[i]
	})
	for i := range 4 {
		ask(context.Background(), i)
	}
	p.write(start.Add(2*time.Second), "")    // 20s of scenario time at speed 10
	p.write(start.Add(time.Minute), " done") // never past the total
	want := "drill outage: breaker 2/3 20s/1m5s: 4 questions (primary 1, fallback 2, error 1); breakers: model/p1 open, 1 closed\n" +
		"drill outage: breaker 2/3 1m5s/1m5s done: 4 questions (primary 1, fallback 2, error 1); breakers: model/p1 open, 1 closed\n"
	if got := b.String(); got != want {
		t.Fatalf("progress:\n%s\nwant:\n%s", got, want)
	}
	for _, tt := range []struct {
		snaps []breaker.Snapshot
		want  string
	}{
		{nil, "none"},
		{[]breaker.Snapshot{{Name: "b"}, {Name: "a"}}, "all 2 closed"},
		{[]breaker.Snapshot{{Name: "b", State: breaker.StateOpen}, {Name: "a", State: breaker.StateHalfOpen}}, "a half_open, b open"},
	} {
		if got := breakerStates(tt.snaps, true); got != tt.want {
			t.Errorf("breakerStates(%v) = %q, want %q", tt.snaps, got, tt.want)
		}
	}
	if newProgress(Options{Scenario: sc}, SettingBreaker, 0, 1, 1) != nil {
		t.Fatal("progress without a writer")
	}
}

// TestRunProgress: a run with Options.Progress writes lines while a
// setting plays and one when it ends (TestMain's goleak checks that the
// writer stops with Run).
func TestRunProgress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(api.AskResponse{Answer: "a", Source: "fallback"})
	}))
	defer srv.Close()
	sc, err := LoadScenario(filepath.Join(scenarioDir, "primary-outage.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	qpath := filepath.Join(t.TempDir(), "questions.jsonl")
	if err := os.WriteFile(qpath, []byte(`{"question":"one"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc.Questions, sc.Load = qpath, Load{Rate: 20, Duration: 4 * time.Second} // 80 questions in half a second
	var out lockedBuffer
	if _, err := Run(context.Background(), Options{Scenario: sc, Speed: 8, Target: srv.URL,
		Progress: &out, ProgressEvery: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	last := "drill primary-outage: target 1/1 4s/4s done: 80 questions (fallback 80); breakers: not seen over HTTP"
	if len(lines) < 3 || lines[len(lines)-1] != last {
		t.Fatalf("progress lines:\n%s\nwant some, then %q", out.String(), last)
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "drill primary-outage: target 1/1 ") || strings.Contains(l, "done") {
			t.Errorf("periodic line %q", l)
		}
	}
}
