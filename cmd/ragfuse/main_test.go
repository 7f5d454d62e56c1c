package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ragfuse/ragfuse/api"
	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runCLI runs the command line and returns its exit code and output.
func runCLI(ctx context.Context, getenv func(string) string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	code := run(ctx, args, &env{stdout: &out, stderr: &errb, getenv: getenv})
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{nil, exitUsage, "", "Commands:"},
		{[]string{"help"}, exitOK, "serve", ""},
		{[]string{"--help"}, exitOK, "chaos", ""},
		{[]string{"help", "serve"}, exitOK, "--demo-faults", ""},
		{[]string{"serve", "-h"}, exitOK, "", "--config"},
		{[]string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{[]string{"serve", "--no-such-flag"}, exitUsage, "", "flag provided but not defined"},
		{[]string{"serve", "extra"}, exitUsage, "", `unexpected argument "extra"`},
		{[]string{"serve", "--demo-faults", "demo-primary"}, exitUsage, "", "--demo-faults"},
		{[]string{"serve", "--demo-faults", "demo-primary=explode"}, exitUsage, "", "unknown mode"},
		{[]string{"serve", "--demo-faults", "nobody=hang"}, exitUsage, "", `unknown model "nobody"`},
		{[]string{"serve", "--config", "x.yaml", "--demo-faults", "demo-primary=hang"}, exitUsage, "", "demo only"},
		{[]string{"chaos", "--embedding-dim", "0"}, exitUsage, "", "--embedding-dim"},
		{[]string{"chaos", "--embedding-dim", "10000"}, exitUsage, "", "--embedding-dim"},
		{[]string{"chaos", "--models", "qwen-max,qwen-turbo", "--faults", "qwen3-max=hang"}, exitUsage, "",
			`--faults: model "qwen3-max" is not served (--models qwen-max,qwen-turbo); a fault is keyed by the model name a request carries`},
		{[]string{"chaos", "--models", "a", "--faults", "a=hang,b=status:503"}, exitUsage, "", `model "b" is not served`},
		{[]string{"version"}, exitOK, api.ReadBuild().String() + "\n", ""},
		{[]string{"version"}, exitOK, runtime.Version(), ""},
		{[]string{"version", "--json"}, exitUsage, "", "flag provided but not defined"},
		{[]string{"help"}, exitOK, "version", ""},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(ctx, nil, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d with %q / %q", code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, body, want string
	}{
		{"missing.yaml", "", "missing.yaml"},
		{"unknown.yaml", "server: {adr: x}\n", "adr"},
		{"badtimeout.yaml", "tiers:\n  - {name: s, kind: static, message: hi, timeout: -1s}\n", "tiers[0].timeout"},
		{"nokey.yaml", "auth: {keys: [{key_env: RAGFUSE_TEST_UNSET_KEY, tenant: acme}]}\n" +
			"tiers:\n  - {name: s, kind: static, message: hi}\n", "auth.keys[0].key_env"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if tc.body != "" {
				path = write(tc.name, tc.body)
			}
			code, _, stderr := runCLI(context.Background(), nil, "serve", "--config", path)
			if code != exitError || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 1 naming %q", code, stderr, tc.want)
			}
		})
	}
}

func TestExampleConfigsLoad(t *testing.T) {
	matches, err := filepath.Glob("../../testdata/configs/*.yaml")
	if err != nil || len(matches) < 2 {
		t.Fatalf("example configs: %v %v", matches, err)
	}
	for _, path := range matches {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, err := config.Load(path); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseFaults(t *testing.T) {
	got, err := parseFaults("demo-primary=hang, demo-fallback=status:503,*=latency:250ms,x=break:3,y=rate_limit:2s")
	if err != nil {
		t.Fatal(err)
	}
	want := []modelFault{
		{"demo-primary", llmtest.Fault{Mode: llmtest.ModeHang}},
		{"demo-fallback", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 503}},
		{"*", llmtest.Fault{Mode: llmtest.ModeLatency, Delay: 250 * time.Millisecond}},
		{"x", llmtest.Fault{Mode: llmtest.ModeBreak, After: 3}},
		{"y", llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: 2 * time.Second}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("item %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"=hang", "m=", "m=hang:1", "m=status:abc", "m=status:99", "m=latency:-1s", "m=nope"} {
		if _, err := parseFaults(bad); err == nil {
			t.Errorf("parseFaults(%q) accepted", bad)
		}
	}
}

func TestChaosCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out bytes.Buffer
	w := &lockedWriter{w: &out, started: make(chan struct{})}
	go func() {
		done <- run(ctx, []string{"chaos", "--addr", "127.0.0.1:0", "--faults", "m=status:503"},
			&env{stdout: w, stderr: w, getenv: func(string) string { return "" }})
	}()
	<-w.started
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, w.String())
	}
	s := w.String()
	if !strings.Contains(s, "http://127.0.0.1:") || !strings.Contains(s, "/_llmtest/faults") || !strings.Contains(s, "stopping") {
		t.Fatalf("output %s", s)
	}
}

// TestChaosServesRerank: the chaos upstream answers the rerank API, with
// the faults given on the command line.
func TestChaosServesRerank(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	w := &lockedWriter{w: &bytes.Buffer{}, started: make(chan struct{})}
	go func() {
		done <- run(ctx, []string{"chaos", "--addr", "127.0.0.1:0", "--faults", "bad-rerank=rate_limit"},
			&env{stdout: w, stderr: w, getenv: func(string) string { return "" }})
	}()
	defer func() {
		cancel()
		<-done
	}()
	<-w.started
	line, _, _ := strings.Cut(w.String(), "\n")
	base := line[strings.Index(line, "http://"):]
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	post := func(model string) int {
		resp, err := (&http.Client{Transport: tr}).Post(base+"/rerank", "application/json",
			strings.NewReader(`{"model":"`+model+`","query":"refund","documents":["refund policy","shipping"],"top_n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct {
			Results []struct{ Index int } `json:"results"`
		}
		if resp.StatusCode == http.StatusOK && (json.NewDecoder(resp.Body).Decode(&got) != nil || len(got.Results) != 1 || got.Results[0].Index != 0) {
			t.Errorf("%s: results %+v, want the refund document alone", model, got.Results)
		}
		return resp.StatusCode
	}
	if code := post("rerank"); code != http.StatusOK {
		t.Errorf("rerank answered %d, want 200", code)
	}
	if code := post("bad-rerank"); code != http.StatusTooManyRequests {
		t.Errorf("bad-rerank answered %d, want 429", code)
	}
}

func TestServedFaults(t *testing.T) {
	faults, err := parseFaults("a=hang,*=latency:1s")
	if err != nil {
		t.Fatal(err)
	}
	if err := servedFaults(faults, []string{"a"}); err != nil {
		t.Errorf("a fault for a served model and one for every model refused: %v", err)
	}
	if err := servedFaults(faults, nil); err != nil {
		t.Errorf("refused while any model name is served: %v", err)
	}
	if err := servedFaults(faults, []string{"b"}); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("a fault for an unserved model: %v", err)
	}
}
