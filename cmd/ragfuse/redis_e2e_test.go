package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// e2eConfig is a primary -> fallback -> retrieval -> static chain sharing
// its breakers through Redis; UPSTREAM, REDIS, PREFIX and KB are replaced.
const e2eConfig = `
server: {request_timeout: 3s}
models:
  big:   {base_url: "UPSTREAM", model: big}
  small: {base_url: "UPSTREAM", model: small}
knowledge_base: {path: "KB"}
redis: {url: "REDIS", prefix: "PREFIX", op_timeout: 500ms}
tiers:
  - {name: primary, kind: llm, models: [big], timeout: 1s, breaker: {failure_threshold: 2, open_duration: 1m}}
  - {name: fallback, kind: llm, models: [small], timeout: 1s}
  - {name: retrieval, kind: retrieval}
  - {name: static, kind: static, message: "sorry"}
`

// serveProc is one `ragfuse serve` process.
type serveProc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{} // closed when its output is drained
	mu   sync.Mutex    // guards log
	log  strings.Builder
}

var listeningRE = regexp.MustCompile(`msg="ragfuse listening" url=(\S+)`)

// startServe runs bin serve with config and waits until it listens.
func startServe(t *testing.T, bin, config string) *serveProc {
	t.Helper()
	p := &serveProc{cmd: exec.Command(bin, "serve", "--config", config, "--addr", "127.0.0.1:0"), done: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				urls <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		stopped := make(chan struct{})
		go func() { <-p.done; _ = p.cmd.Wait(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-stopped
		}
	})
	select {
	case p.url = <-urls:
	case <-p.done:
		t.Fatalf("serve exited:\n%s", p.output())
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not start:\n%s", p.output())
	}
	return p
}

func (p *serveProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// ask posts a question and returns the answer's source.
func (p *serveProc) ask(t *testing.T, q string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"tenant_id": "acme", "question": q})
	resp, err := http.Post(p.url+"/v1/ask", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Source string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("ask: %d %v", resp.StatusCode, err)
	}
	return out.Source
}

// status is the part of /v1/status this test reads.
type status struct {
	Breakers []struct{ Name, State string }
	Store    struct {
		Kind    string
		Healthy bool
	}
	Cooldowns     []struct{ Model string }
	KnowledgeBase struct{ Version uint64 } `json:"knowledge_base"`
	Cluster       struct {
		Agree     bool
		Instances []struct {
			Instance string
			Version  uint64
			ReloadID string `json:"reload_id"`
		}
	}
}

func (p *serveProc) status(t *testing.T) status {
	t.Helper()
	resp, err := http.Get(p.url + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func (st status) breaker(name string) string {
	for _, b := range st.Breakers {
		if b.Name == name {
			return b.State
		}
	}
	return ""
}

// TestServeSharesBreakersThroughRedis runs two `ragfuse serve` processes
// on one Redis and one upstream: a model tripped through one is open on
// the other, a 429 through one cools the model down on the other, and a
// reload through one reloads both.
func TestServeSharesBreakersThroughRedis(t *testing.T) {
	bin, config, srv := buildE2E(t, e2eConfig)
	a, b := startServe(t, bin, config), startServe(t, bin, config)
	for _, p := range []*serveProc{a, b} {
		if st := p.status(t); st.Store.Kind != "redis" || !st.Store.Healthy || st.breaker("model/big") != "closed" {
			t.Fatalf("status at start: %+v", st)
		}
	}

	srv.SetFault("big", llmtest.Fault{Mode: llmtest.ModeStatus, Status: 500})
	for _, q := range []string{"How do I return an item?", "How long does shipping take?"} {
		if src := a.ask(t, q); src != "fallback" {
			t.Fatalf("A answered from %s", src)
		}
	}
	if st := a.status(t); st.breaker("model/big") != "open" {
		t.Fatalf("A: model/big %q", st.breaker("model/big"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.status(t).breaker("model/big") != "open" {
		if time.Now().After(deadline) {
			t.Fatalf("B never saw the trip; B's log:\n%s", b.output())
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.ResetStats()
	if src := b.ask(t, "Can I change my order?"); src != "fallback" || srv.Stats("big").Calls != 0 {
		t.Fatalf("B: source %s, %d calls to the open model", src, srv.Stats("big").Calls)
	}

	// A 429 through B cools the fallback down on A too.
	srv.SetFault("small", llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: time.Hour})
	if src := b.ask(t, "Is my parcel insured?"); src != "retrieval" {
		t.Fatalf("B answered from %s under a 429", src)
	}
	waitFor(t, "A to see the cooldown", func() bool { return len(a.status(t).Cooldowns) == 1 })
	srv.ResetStats()
	if src := a.ask(t, "Do you ship abroad?"); src != "retrieval" || srv.Stats("small").Calls != 0 {
		t.Fatalf("A: source %s, %d calls to the cooling model", src, srv.Stats("small").Calls)
	}

	// A reload through A reloads B; both list both instances.
	resp, err := http.Post(a.url+"/v1/admin/reload", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Complete bool `json:"complete"`
		Version  uint64
		ID       string `json:"reload_id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if err != nil || !r.Complete || r.Version != 2 {
		t.Fatalf("reload: %+v %v", r, err)
	}
	for _, p := range []*serveProc{a, b} {
		st := p.status(t)
		if st.KnowledgeBase.Version != 2 || len(st.Cluster.Instances) != 2 || !st.Cluster.Agree {
			t.Fatalf("status after the reload: %+v", st)
		}
		for _, m := range st.Cluster.Instances {
			if m.ReloadID != r.ID {
				t.Fatalf("instance %+v did not run reload %s", m, r.ID)
			}
		}
	}
}

// waitFor polls cond every 5ms for at most 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// buildE2E builds the ragfuse binary and writes a config from tmpl (its
// UPSTREAM, REDIS, PREFIX and KB replaced) for a fresh llmtest upstream
// and the test's Redis prefix; it returns the binary, the config's path
// and the upstream.
func buildE2E(t *testing.T, tmpl string) (string, string, *llmtest.Server) {
	t.Helper()
	redistest.Client(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "ragfuse")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	kb, err := filepath.Abs("../../testdata/kb")
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "ragfuse.yaml")
	yaml := strings.NewReplacer("UPSTREAM", srv.URL, "REDIS", redistest.URL(),
		"PREFIX", redistest.Prefix(t), "KB", kb).Replace(tmpl)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return bin, config, srv
}
