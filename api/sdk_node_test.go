package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/retrieval"
)

// nodeSDKDir holds the OpenAI Node SDK check: its package.json pins the
// openai package, which `npm ci` there installs (.ci/run does).
const nodeSDKDir = "../testdata/sdk/node"

// requireNode returns the node binary, or skips the test when node or the
// openai package is missing, unless RAGFUSE_REQUIRE_NODE=1 (set by
// .ci/run), which makes it fail instead.
func requireNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(nodeSDKDir, "node_modules", "openai", "package.json"))
	}
	if err != nil {
		msg := "the OpenAI Node SDK check needs node and `npm ci` in testdata/sdk/node: " + err.Error()
		if os.Getenv("RAGFUSE_REQUIRE_NODE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + " (RAGFUSE_REQUIRE_NODE=1 makes this a failure)")
	}
	return node
}

// TestOpenAINodeSDK: the OpenAI Node SDK lists the models and sends a
// three-message conversation (with a system message), plain and
// streamed, through an API key; the follow-up is answered from the
// article its history is about; a tool message is refused with a 400
// the SDK raises.
func TestOpenAINodeSDK(t *testing.T) {
	node := requireNode(t)
	kb, err := retrieval.Open("../testdata/kb")
	if err != nil {
		t.Fatal(err)
	}
	rec := &upstreamRecorder{}
	h := newHarness(t, harnessOptions{kb: kb, upstream: rec.wrap,
		api: func(c *Config) { c.Keys = map[string]string{"sk-node-check": "acme"} }})
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "conversation.mjs")
	cmd.Dir = nodeSDKDir
	cmd.Env = append(os.Environ(), "RAGFUSE_BASE_URL="+ts.URL+"/v1", "RAGFUSE_API_KEY=sk-node-check",
		"RAGFUSE_FIRST="+invoiceHistory[0].Content, "RAGFUSE_REPLY="+invoiceHistory[1].Content,
		"RAGFUSE_FOLLOW_UP="+followUp)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("node: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("node: %v", err)
	}
	var got struct {
		Models   []string `json:"models"`
		Content  string   `json:"content"`
		Source   string   `json:"source"`
		Docs     []string `json:"docs"`
		Streamed string   `json:"streamed"`
		Refused  *struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		} `json:"refused"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %s: %v", out, err)
	}
	if !slices.Equal(got.Models, []string{ModelID}) {
		t.Errorf("models %v, want [%s]", got.Models, ModelID)
	}
	if got.Source != "primary" || len(got.Docs) == 0 || got.Docs[0] != invoiceArticle {
		t.Errorf("source %q, docs %v; want primary with %s first", got.Source, got.Docs, invoiceArticle)
	}
	if !strings.Contains(got.Content, "simulated answer") || !strings.Contains(got.Streamed, "simulated answer") {
		t.Errorf("content %q, streamed %q", got.Content, got.Streamed)
	}
	if got.Refused == nil || got.Refused.Status != http.StatusBadRequest || got.Refused.Code != CodeUnsupportedRole {
		t.Errorf("tool message: %+v, want a 400 %s", got.Refused, CodeUnsupportedRole)
	}
	// Both answers had the conversation in their prompt, the client's
	// system message not among it.
	reqs := rec.requests(modelPrimary)
	if len(reqs) != 2 {
		t.Fatalf("%d primary calls, want 2", len(reqs))
	}
	for _, r := range reqs {
		if len(r.Messages) != 4 || r.Messages[1].Content != invoiceHistory[0].Content || r.Messages[0].Content == "You are a helpful assistant." {
			t.Errorf("prompt %+v", r.Messages)
		}
	}
}
