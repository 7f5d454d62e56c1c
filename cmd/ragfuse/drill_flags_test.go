package main

import (
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

	"github.com/ragfuse/ragfuse/api"
)

// TestDrillSpeedNaNIsUsageError: --speed must be a positive number; NaN
// slipped past the check and failed later, exit 1, naming rate_limit
// fields the user never wrote.
func TestDrillSpeedNaNIsUsageError(t *testing.T) {
	for _, speed := range []string{"NaN", "0", "-1"} {
		code, _, stderr := runCLI(context.Background(), nil, "drill", "--scenario", "../../testdata/scenarios/primary-outage.yaml",
			"--out", t.TempDir(), "--speed", speed)
		if code != exitUsage || !strings.Contains(stderr, "--speed") {
			t.Errorf("--speed %s: exit %d, stderr %q; want exit 2 naming --speed", speed, code, stderr)
		}
	}
}

// TestDrillOutOfRangeIsUsageError: a --speed above the drill's limit and
// an unknown --settings name are bad command lines (exit 2, naming the
// flag), not runtime errors found once the drill has started (exit 1).
func TestDrillOutOfRangeIsUsageError(t *testing.T) {
	tests := []struct {
		flag string
		args []string
	}{
		{"--speed", []string{"--speed", "2000"}},
		{"--speed", []string{"--speed", "1000.5"}},
		{"--speed", []string{"--speed", "+Inf"}},
		{"--settings", []string{"--settings", "bogus"}},
		{"--settings", []string{"--settings", "none,bogus"}},
		{"--settings", []string{"--settings", " , "}},
	}
	for _, tt := range tests {
		args := append([]string{"drill", "--scenario", "../../testdata/scenarios/primary-outage.yaml", "--out", t.TempDir()}, tt.args...)
		code, _, stderr := runCLI(context.Background(), nil, args...)
		if code != exitUsage || !strings.Contains(stderr, tt.flag) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %s", tt.args, code, stderr, tt.flag)
		}
	}
}

// tinyScenario writes a scenario of 20 questions over one second (a tenth
// of a second at --speed 10) whose model fails halfway, and returns its
// path.
func tinyScenario(t *testing.T) string {
	t.Helper()
	kb, err := filepath.Abs("../../testdata/kb")
	if err != nil {
		t.Fatal(err)
	}
	questions, err := filepath.Abs("../../testdata/kb-eval.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny.yaml")
	yaml := fmt.Sprintf(`config:
  models: {p1: {base_url: "http://127.0.0.1:9/v1"}}
  knowledge_base: {path: %q}
  tiers:
    - {name: primary, kind: llm, models: [p1]}
    - {name: static, kind: static, message: sorry}
faults:
  p1: [{at: 0s, mode: ok}, {at: 500ms, mode: hang}]
load: {rate: 20, duration: 1s}
questions: %q
tenants: [t1, t2]
`, kb, questions)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// askServer stands in for a ragfuse server whose auth.keys hold key for
// tenant acme ("" for no keys); it records the tenant_id of each request.
func askServer(t *testing.T, key string) (*httptest.Server, func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	tenants := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.AskRequest
		if json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		tenants[req.TenantID]++
		mu.Unlock()
		switch {
		case key != "" && r.Header.Get("Authorization") != "Bearer "+key:
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		case key != "" && req.TenantID != "" && req.TenantID != "acme":
			http.Error(w, "tenant_mismatch", http.StatusForbidden)
		default:
			_ = json.NewEncoder(w).Encode(api.AskResponse{Answer: "a", Source: "primary"})
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return tenants
	}
}

// TestDrillTargetRefusesSettings: --settings chooses in-process protection
// settings; with --target it was silently ignored. It is a bad command
// line.
func TestDrillTargetRefusesSettings(t *testing.T) {
	srv, _ := askServer(t, "")
	code, _, stderr := runCLI(context.Background(), nil, "drill", "--scenario", tinyScenario(t), "--out", t.TempDir(),
		"--speed", "10", "--target", srv.URL, "--settings", "none")
	if code != exitUsage || !strings.Contains(stderr, "--settings") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming --settings", code, stderr)
	}
}

// TestDrillTargetAPIKeyEnv drives a server with auth.keys: the key is read
// from the variable --api-key-env names and sent as a bearer token, no
// tenant_id is sent (the key decides), every question is answered, and the
// key is neither printed nor written to the report.
func TestDrillTargetAPIKeyEnv(t *testing.T) {
	const key = "sk-drill-secret-0123456789"
	srv, tenants := askServer(t, key)
	out := t.TempDir()
	getenv := func(name string) string {
		if name == "RAGFUSE_DRILL_KEY" {
			return key
		}
		return ""
	}
	code, stdout, stderr := runCLI(context.Background(), getenv, "drill", "--scenario", tinyScenario(t), "--out", out,
		"--speed", "10", "--target", srv.URL, "--api-key-env", "RAGFUSE_DRILL_KEY")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "| answered by primary | 20 |") {
		t.Errorf("want all 20 questions answered:\n%s", stdout)
	}
	if got := tenants(); len(got) != 1 || got[""] != 20 {
		t.Errorf("tenant_id sent %v, want none with a key", got)
	}
	leaks := stdout + stderr
	for _, name := range []string{"report.md", "report.json"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		leaks += string(b)
	}
	if strings.Contains(leaks, key) {
		t.Error("the API key was printed or written to the report")
	}
}

// TestDrillTargetAllFailed: a server that refuses every request (here for
// want of an API key) made a report of "not answered 20, availability
// 0.00%" and exit 0. Now the report counts the answers by HTTP status and
// the command fails, saying why and what to do.
func TestDrillTargetAllFailed(t *testing.T) {
	srv, _ := askServer(t, "the-servers-key")
	out := t.TempDir()
	code, stdout, stderr := runCLI(context.Background(), nil, "drill", "--scenario", tinyScenario(t), "--out", out,
		"--speed", "10", "--target", srv.URL)
	if code != exitError || !strings.Contains(stderr, "HTTP 401: 20") || !strings.Contains(stderr, "--api-key-env") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming HTTP 401 and --api-key-env", code, stderr)
	}
	if !strings.Contains(stdout, "| not answered: HTTP 401 | 20 |") {
		t.Errorf("report does not count the answers by status:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
		t.Errorf("no report written: %v", err)
	}
}

// TestDrillAPIKeyEnvErrors: --api-key-env needs --target and the name of
// a set variable; a value that is not a variable name (a key pasted in by
// mistake) is refused without being repeated.
func TestDrillAPIKeyEnvErrors(t *testing.T) {
	const pasted = "sk-live-abc.def/123"
	srv, _ := askServer(t, "")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no target", []string{"--api-key-env", "RAGFUSE_DRILL_KEY"}, exitUsage, "--api-key-env needs --target"},
		{"key pasted", []string{"--target", srv.URL, "--api-key-env", pasted}, exitUsage, "--api-key-env must be the name of an environment variable"},
		{"unset", []string{"--target", srv.URL, "--api-key-env", "RAGFUSE_DRILL_UNSET"}, exitError, "RAGFUSE_DRILL_UNSET is empty or unset"},
		{"bad target", []string{"--target", "127.0.0.1:8080"}, exitUsage, "--target must be an http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"drill", "--scenario", tinyScenario(t), "--out", t.TempDir(), "--speed", "10"}, tt.args...)
			code, stdout, stderr := runCLI(context.Background(), nil, args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.want)
			}
			if strings.Contains(stdout+stderr, pasted) {
				t.Error("the pasted key was repeated")
			}
		})
	}
}

// TestDrillHelpNamesAPIKeyEnv: ragfuse help drill documents the flag.
func TestDrillHelpNamesAPIKeyEnv(t *testing.T) {
	code, stdout, _ := runCLI(context.Background(), nil, "help", "drill")
	if code != exitOK || !strings.Contains(stdout, "--api-key-env NAME") || !strings.Contains(stdout, "-api-key-env string") {
		t.Errorf("exit %d, help:\n%s", code, stdout)
	}
}

// TestDrillPrintsProgressAndPaths: the drill tells on stderr how each
// setting went (its last progress line) and where it wrote the report.
func TestDrillPrintsProgressAndPaths(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := runCLI(context.Background(), nil, "drill", "--scenario", tinyScenario(t), "--out", out,
		"--speed", "10", "--settings", "none,breaker")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"drill tiny: none 1/2 1s/1s done: 20 questions (",
		"drill tiny: breaker 2/2 1s/1s done: 20 questions (",
		"; breakers: all 3 closed\n",  // none: breakers that never trip
		"; breakers: model/p1 open, ", // breaker: the hung model's
		fmt.Sprintf("ragfuse drill: wrote %s, %s, %s\n", filepath.Join(out, "report.md"), filepath.Join(out, "report.json"),
			filepath.Join(out, "report.png")),
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
