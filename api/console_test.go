package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ragfuse/ragfuse/api/browsertest"
	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// consoleSite serves h's server on a loopback port and returns its base
// URL. When the test ends, it cuts the connections still open (a page's
// live feed) before closing.
func consoleSite(t *testing.T, h *harness) string {
	t.Helper()
	ts := httptest.NewServer(h.srv.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL
}

func TestConsoleFiles(t *testing.T) {
	h := demoHarness(t)
	base := consoleSite(t, h)
	settings := fmt.Sprintf(`{"demo":true,"feed":"/v1/events","show_questions":false,"version":%q}`, ReadBuild().Version)
	for _, tc := range []struct {
		path, contentType string
		status            int
		body              string
	}{
		{"/console", "text/html; charset=utf-8", 200, "<title>ragfuse console</title>"},
		{"/console/", "text/html; charset=utf-8", 200, "<title>ragfuse console</title>"},
		{"/console/console.js", "text/javascript; charset=utf-8", 200, `"use strict";`},
		{"/console/console.css", "text/css; charset=utf-8", 200, "--open:"},
		{"/console/settings.json", "application/json", 200, settings},
		{"/console/nope.js", "application/json", 404, `"code":"not_found"`},
		{"/console/..%2fserver.go", "application/json", 404, `"code":"not_found"`},
		{"/console/console/index.html", "application/json", 404, `"code":"not_found"`},
	} {
		res, err := http.Get(base + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.contentType) ||
			!strings.Contains(b.String(), tc.body) {
			t.Errorf("GET %s: %d %q, body %.120q; want %d %q with %q", tc.path, res.StatusCode,
				res.Header.Get("Content-Type"), b.String(), tc.status, tc.contentType, tc.body)
		}
		if tc.status == 200 && !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, res.Header.Get("Content-Security-Policy"))
		}
	}
}

// TestConsoleFetchesNothingElsewhere reads the console's files: every
// reference they make stays on the server (the SVG namespace is a name,
// not a fetch).
func TestConsoleFetchesNothingElsewhere(t *testing.T) {
	remote := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|url\(`)
	err := fs.WalkDir(consoleFiles, "console", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := consoleFiles.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range remote.FindAllString(string(b), -1) {
			if m != "http://www.w3.org" {
				t.Errorf("%s refers to %q", path, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// statusOf returns GET /v1/status of h.
func statusOf(t *testing.T, h *harness) StatusResponse {
	t.Helper()
	w := h.do(http.MethodGet, "/v1/status", "")
	var st StatusResponse
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("status %d %s: %v", w.Code, w.Body, err)
	}
	return st
}

// pageStates returns the state the page shows for each breaker of its
// table, and each tier of its chain as "tier/<name>".
func pageStates(b *browsertest.Browser) map[string]string {
	return browsertest.Eval[map[string]string](b, `(() => {
		const out = {};
		for (const r of document.querySelectorAll("#breakers tr[data-breaker]"))
			out[r.dataset.breaker] = r.querySelector('[data-role="state"]').textContent;
		for (const t of document.querySelectorAll("#chain .tier"))
			out["chain:tier/" + t.dataset.tier] = t.querySelector('[data-role="state"]').textContent;
		return out;
	})()`)
}

// matchesStatus checks that the page shows the tiers of st in order, and
// every breaker of st in its state, in the table and on the chain.
func matchesStatus(t *testing.T, b *browsertest.Browser, st StatusResponse) {
	t.Helper()
	var want []string
	for _, ti := range st.Tiers {
		want = append(want, ti.Name)
	}
	if got := browsertest.Eval[[]string](b, `Array.from(document.querySelectorAll("#chain .tier"), (e) => e.dataset.tier)`); !slices.Equal(got, want) {
		t.Errorf("chain %v, want %v", got, want)
	}
	got := pageStates(b)
	for _, br := range st.Breakers {
		if got[br.Name] != br.State {
			t.Errorf("breaker %s: the page shows %q, status %q", br.Name, got[br.Name], br.State)
		}
		if tier, ok := strings.CutPrefix(br.Name, "tier/"); ok && got["chain:tier/"+tier] != br.State {
			t.Errorf("chain %s: the page shows %q, status %q", tier, got["chain:tier/"+tier], br.State)
		}
	}
}

// TestConsolePageMatchesStatus loads the console: no console error, the
// tier chain and every breaker as /v1/status has them, and a breaker
// tripped behind the page's back shown open, with its countdown, within
// a poll.
func TestConsolePageMatchesStatus(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	site := consoleSite(t, h) // before the browser: its cleanup closes the browser first
	b := browsertest.New(t)
	b.Open(site+"/console", "#chain .tier")
	b.WaitText(`#breakers tr[data-breaker="model/test-primary"] [data-role="state"]`, "closed")
	matchesStatus(t, b, statusOf(t, h))

	br, ok := h.p.Breakers().Lookup("tier/retrieval")
	if !ok {
		t.Fatal("no tier/retrieval breaker")
	}
	br.Trip()
	b.WaitText(`#chain .tier[data-tier="retrieval"] [data-role="state"]`, "open")
	b.WaitText(`#breakers tr[data-breaker="tier/retrieval"] [data-role="state"]`, "open")
	matchesStatus(t, b, statusOf(t, h))
	if left := b.Text(`#breakers tr[data-breaker="tier/retrieval"] [data-role="until"]`); !strings.HasSuffix(left, " left") {
		t.Errorf("open breaker's countdown %q", left)
	}
	if n := browsertest.Eval[int](b, `document.querySelectorAll('#breakers tr[data-breaker="tier/static"] button[data-action="trip"][disabled]').length`); n != 1 {
		t.Errorf("the static tier's trip button is not disabled")
	}
	b.Check()
}

// demoHarness is a harness whose server runs the demo routes over its
// upstream, with breakers that open on the first failure.
func demoHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, harnessOptions{config: func(c *config.Config) {
		for i := range c.Tiers {
			if c.Tiers[i].Breaker != nil {
				c.Tiers[i].Breaker = &config.Breaker{FailureThreshold: 1}
			}
		}
	}})
	h.srv.demo, h.srv.models = h.up, []string{modelPrimary, modelFallback}
	h.srv.e = h.srv.routes()
	return h
}

// TestConsoleDemoFaultSwitch asks through the demo's chat panel, switches
// the primary's fault on from the page, and sees the next answer come from
// the fallback and the primary's breaker open.
func TestConsoleDemoFaultSwitch(t *testing.T) {
	h := demoHarness(t)
	site := consoleSite(t, h) // before the browser: its cleanup closes the browser first
	b := browsertest.New(t)
	b.Open(site+"/console", "#chain .tier")
	const badge = `#chat-log .answer [data-role="badge"]`

	b.TypeInto("#chat-input", "How do I return an item?")
	b.Click("#chat-send")
	b.WaitText(badge, "primary")

	b.Click(`#faults .fault[data-model="test-primary"] button[data-fault="HTTP 503"]`)
	b.WaitText(`#faults .fault[data-model="test-primary"] button[aria-pressed="true"]`, "HTTP 503")
	if f := h.up.Fault(modelPrimary); f.Mode != llmtest.ModeStatus || f.Status != 503 {
		t.Fatalf("upstream fault %+v after the switch", f)
	}
	b.TypeInto("#chat-input", "How long do refunds take?")
	b.Click("#chat-send")
	b.WaitText(badge, "fallback")
	if note := b.Text(`#chat-log .answer [data-role="note"]`); note == "" {
		t.Error("a fallback answer without its note")
	}
	if n := browsertest.Eval[int](b, `document.querySelectorAll('#chat-log .answer:first-child button[data-action="refresh"]').length`); n != 1 {
		t.Error("a fallback answer without its refresh action")
	}
	b.WaitText(`#breakers tr[data-breaker="model/test-primary"] [data-role="state"]`, "open")
	matchesStatus(t, b, statusOf(t, h))

	b.Click(`#faults .fault[data-model="test-primary"] button[data-fault="ok"]`)
	b.WaitText(`#faults .fault[data-model="test-primary"] button[aria-pressed="true"]`, "ok")
	if f := h.up.Fault(modelPrimary); f.Mode != llmtest.ModeOK && f.Mode != "" {
		t.Errorf("upstream fault %+v after switching back to ok", f)
	}
	b.Check()
}

// TestConsoleAdminRefusedWithoutKey: on a server with API keys, the page
// gets no status and its admin buttons, which ask for confirmation, are
// refused until the operator types a key; the key typed is then sent as
// a bearer token, for the live feed and the admin actions alike.
func TestConsoleAdminRefusedWithoutKey(t *testing.T) {
	const tenantKey, adminKey = "sk-console-tenant", "sk-console-admin"
	h := newHarness(t, harnessOptions{api: func(c *Config) {
		c.Keys = map[string]string{tenantKey: "acme"}
		c.AdminKeys = map[string]string{adminKey: "ops"}
	}})
	site := consoleSite(t, h) // before the browser: its cleanup closes the browser first
	b := browsertest.New(t)
	b.ExpectFailedLoad("/v1/events")
	b.ExpectFailedLoad("/v1/admin/")
	b.Do(chromedp.Navigate(site + "/console"))
	b.WaitText("#conn", "feed refused")

	tripped, _ := h.p.Breakers().Lookup("tier/retrieval")
	tripped.Trip()
	before := h.p.Status().KnowledgeBase.Version
	b.Click("#reload")
	b.WaitText("#confirm-text", "Reload the knowledge base?")
	b.Click("#confirm-cancel")
	b.WaitText("#admin-msg", "cancelled")
	b.Click("#reload")
	b.Click("#confirm-ok")
	b.WaitText("#admin-msg", "Reload the knowledge base: refused, HTTP 401 (unauthorized: an Authorization: Bearer <key> header is required) — type the admin key")
	b.Click("#reset-all")
	b.Click("#confirm-ok")
	b.WaitText("#admin-msg", "Reset every breaker: refused, HTTP 401 (unauthorized: an Authorization: Bearer <key> header is required) — type the admin key")

	// A tenant's key is a key, but not an admin's: refused with 403.
	b.TypeInto("#admin-key", tenantKey)
	b.Click("#reset-all")
	b.Click("#confirm-ok")
	b.WaitText("#admin-msg", "Reset every breaker: refused, HTTP 403 (forbidden: this route needs an admin key (auth.admin_keys)) — this key may not use admin actions")
	if after := h.p.Status().KnowledgeBase.Version; after != before {
		t.Errorf("knowledge base reloaded without an admin key: version %d -> %d", before, after)
	}
	if tripped.State() != breaker.StateOpen {
		t.Error("breakers reset without an admin key")
	}

	b.TypeInto("#admin-key", adminKey)
	b.WaitText("#conn", "live")
	b.WaitText(`#breakers tr[data-breaker="tier/retrieval"] [data-role="state"]`, "open")
	b.Click("#reset-all")
	b.Click("#confirm-ok")
	b.WaitText("#admin-msg", "Reset every breaker: done")
	b.WaitText(`#breakers tr[data-breaker="tier/retrieval"] [data-role="state"]`, "closed")
	if tripped.State() != breaker.StateClosed {
		t.Error("reset with the admin key did not close the breaker")
	}
	b.Check()
}
