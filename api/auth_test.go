package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestKeyring(t *testing.T) {
	kr := newKeyring(map[string]string{"sk-a": "a", "sk-b": "b"}, map[string]string{"sk-ops": "ops"})
	for key, want := range map[string]keyOwner{"sk-a": {tenant: "a"}, "sk-b": {tenant: "b"}, "sk-ops": {admin: "ops"},
		"sk-c": {}, "": {}, "sk-a ": {}} {
		got, ok := kr.owner(key)
		if got != want || ok != (want != keyOwner{}) {
			t.Errorf("owner(%q) = %+v, %v; want %+v", key, got, ok, want)
		}
	}
	if newKeyring(nil, nil).enabled() {
		t.Error("an empty keyring is enabled")
	}
	if !newKeyring(nil, map[string]string{"sk-ops": "ops"}).enabled() {
		t.Error("a keyring of admin keys only is not enabled")
	}
}

// The keys of the admin-scope tests.
const (
	tenantKeyAcme = "sk-tenant-acme-secret"
	adminKeyOps   = "sk-admin-ops-secret"
)

// scopeCase is who asks in TestAdminScope: with keys configured or not,
// from a loopback address or not, with an Authorization header or none.
type scopeCase struct {
	name   string
	keys   bool
	remote string
	auth   string
}

// TestAdminScope guards the admin routes from tenants: every admin route
// under each kind of caller. With keys configured, an admin route needs an
// admin key (a tenant's key is 403 forbidden, none is 401); with no keys
// at all, only a loopback client gets through. GET /v1/status is the full
// status for an admin and the caller's own tenant status for anyone else.
// Every admin action is logged with the admin's name, never the key.
func TestAdminScope(t *testing.T) {
	routes := []struct{ method, path, body string }{
		{http.MethodPost, "/v1/admin/reload", ""},
		{http.MethodPost, "/v1/admin/breakers/trip", `{"breaker":"tier/primary"}`},
		{http.MethodPost, "/v1/admin/breakers/reset", `{"breaker":"tier/primary"}`},
		{http.MethodGet, "/v1/status", ""},
	}
	cases := []scopeCase{
		{"no key", true, loopbackClient, ""},
		{"tenant key", true, loopbackClient, "Bearer " + tenantKeyAcme},
		{"admin key", true, remoteClient, "Bearer " + adminKeyOps},
		{"loopback without keys", false, loopbackClient, ""},
		{"non-loopback without keys", false, remoteClient, ""},
	}
	// want is the status of an admin route, and of /v1/status which view.
	want := map[string]struct {
		admin  int
		status string
	}{
		"no key":                    {http.StatusUnauthorized, "401"},
		"tenant key":                {http.StatusForbidden, "tenant"},
		"admin key":                 {http.StatusOK, "full"},
		"loopback without keys":     {http.StatusOK, "full"},
		"non-loopback without keys": {http.StatusForbidden, "tenant"},
	}
	for _, sc := range cases {
		t.Run(sc.name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{api: func(c *Config) {
				if sc.keys {
					c.Keys = map[string]string{tenantKeyAcme: "acme"}
					c.AdminKeys = map[string]string{adminKeyOps: "ops"}
				}
			}})
			for _, r := range routes {
				w := h.doFrom(sc.remote, r.method, r.path, r.body, "Authorization", sc.auth)
				if r.path == "/v1/status" {
					if got := statusView(t, w); got != want[sc.name].status {
						t.Errorf("%s %s: %s view (%d %s), want %s", r.method, r.path, got, w.Code, w.Body, want[sc.name].status)
					}
					continue
				}
				if w.Code != want[sc.name].admin {
					t.Errorf("%s %s: %d %s, want %d", r.method, r.path, w.Code, w.Body, want[sc.name].admin)
					continue
				}
				if w.Code == http.StatusForbidden {
					if b := decodeError(t, w); b.Error.Code != CodeForbidden {
						t.Errorf("%s %s: code %s, want forbidden", r.method, r.path, b.Error.Code)
					}
				}
			}
			// GET /v1/events carries every tenant's questions: an admin's
			// only. An admitted feed streams until its request ends.
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/events", nil)
			req.RemoteAddr = sc.remote
			if sc.auth != "" {
				req.Header.Set("Authorization", sc.auth)
			}
			w := httptest.NewRecorder()
			h.srv.Handler().ServeHTTP(w, req)
			cancel()
			if w.Code != want[sc.name].admin {
				t.Errorf("GET /v1/events: %d %s, want %d", w.Code, w.Body, want[sc.name].admin)
			}
			logs := h.logs.String()
			if strings.Contains(logs, "sk-") {
				t.Fatalf("a key reached the log:\n%s", logs)
			}
			admin := map[string]string{"admin key": `"admin":"ops"`, "loopback without keys": `"admin":"loopback"`}[sc.name]
			for _, line := range []string{"knowledge base reloaded", "breaker tripped by request", "breaker reset by request"} {
				if logged := logLine(logs, line); admin != "" && !strings.Contains(logged, admin) || admin == "" && logged != "" {
					t.Errorf("log line %q: %q, want it %s", line, logged, map[bool]string{true: "with " + admin, false: "absent"}[admin != ""])
				}
			}
		})
	}
}

// statusView tells which GET /v1/status answer w is: "full", "tenant" (the
// caller's own), or its status code.
func statusView(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	if w.Code != http.StatusOK {
		return strconv.Itoa(w.Code)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &fields); err != nil {
		t.Fatalf("status body %s: %v", w.Body, err)
	}
	_, tenant := fields["tenant"]
	_, bulkheads := fields["bulkheads"]
	switch {
	case tenant && !bulkheads:
		return "tenant"
	case bulkheads && !tenant:
		return "full"
	}
	return "mixed: " + w.Body.String()
}

// logLine returns the first line of logs holding msg, or "".
func logLine(logs, msg string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"msg":"`+msg+`"`) {
			return l
		}
	}
	return ""
}

// TestAdminKeyAsksNoQuestion: an admin key is not a tenant's: on a
// question route it is 403 forbidden, and no model is called. A loopback
// client behind a proxy on the same host (X-Forwarded-For) is not taken
// for a local operator.
func TestAdminKeyAsksNoQuestion(t *testing.T) {
	h := newHarness(t, harnessOptions{api: func(c *Config) {
		c.Keys = map[string]string{tenantKeyAcme: "acme"}
		c.AdminKeys = map[string]string{adminKeyOps: "ops"}
	}})
	w := h.do(http.MethodPost, "/v1/ask", `{"question":"How do I return an item?"}`, "Authorization", "Bearer "+adminKeyOps)
	if w.Code != http.StatusForbidden || decodeError(t, w).Error.Code != CodeForbidden {
		t.Fatalf("ask with an admin key: %d %s", w.Code, w.Body)
	}
	if n := h.upstreamCalls(); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
	open := newHarness(t, harnessOptions{})
	w = open.do(http.MethodPost, "/v1/admin/reload", "", "X-Forwarded-For", "203.0.113.7")
	if w.Code != http.StatusForbidden {
		t.Fatalf("reload through a local proxy without keys: %d %s", w.Code, w.Body)
	}
}

// TestTenantStatusShowsOwnFigures guards the tenants' figures: a tenant's
// GET /v1/status shows the tiers and the breakers' states, and the cache
// entries of that tenant only; not the bulkheads, the rate limits, the
// cooldowns or the other tenants' entries.
func TestTenantStatusShowsOwnFigures(t *testing.T) {
	h := newHarness(t, harnessOptions{api: func(c *Config) {
		c.Keys = map[string]string{tenantKeyAcme: "acme", "sk-tenant-beta": "beta"}
	}})
	for _, q := range []string{"How do I return an item?", "How long does a refund take?", "How long does shipping take?"} {
		h.do(http.MethodPost, "/v1/ask", `{"question":"`+q+`"}`, "Authorization", "Bearer sk-tenant-beta")
	}
	h.do(http.MethodPost, "/v1/ask", `{"question":"How do I return an item?"}`, "Authorization", "Bearer "+tenantKeyAcme)
	w := h.do(http.MethodGet, "/v1/status", "", "Authorization", "Bearer "+tenantKeyAcme)
	if w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var st TenantStatusResponse
	dec := json.NewDecoder(strings.NewReader(w.Body.String()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("tenant status %s: %v", w.Body, err)
	}
	if st.Tenant != "acme" || len(st.Tiers) != 5 || len(st.Breakers) == 0 || st.Breakers[0].State == "" {
		t.Fatalf("tenant status %+v", st)
	}
	if len(st.Caches) != 1 || st.Caches[0].Entries != 1 {
		t.Fatalf("caches %+v, want acme's one entry (beta holds three)", st.Caches)
	}
	// A tenant cannot ask for another's figures.
	w = h.do(http.MethodGet, "/v1/status?tenant_id=beta", "", "Authorization", "Bearer "+tenantKeyAcme)
	if w.Code != http.StatusForbidden {
		t.Fatalf("acme asking for beta's status: %d %s", w.Code, w.Body)
	}
}
