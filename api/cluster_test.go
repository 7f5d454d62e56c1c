package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// clusterHarnesses starts n servers sharing the test Redis under one
// prefix, each with its own upstream.
func clusterHarnesses(t *testing.T, n int) []*harness {
	t.Helper()
	redistest.Client(t)
	prefix := redistest.Prefix(t)
	var hs []*harness
	for range n {
		hs = append(hs, newHarness(t, harnessOptions{config: func(c *config.Config) {
			c.Redis = config.Redis{URL: redistest.URL(), Prefix: prefix, OpTimeout: 500 * time.Millisecond}
		}}))
	}
	return hs
}

// status returns h's admin status.
func (h *harness) status() StatusResponse {
	h.t.Helper()
	var st StatusResponse
	w := h.do(http.MethodGet, "/v1/status", "")
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != http.StatusOK {
		h.t.Fatalf("status: %d %v %s", w.Code, err, w.Body)
	}
	return st
}

// pollFor polls cond every millisecond for at most d.
func pollFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestClusterCooldownAndReset: a 429 on A cools the model down on B and
// C within 100ms, so that they skip it without a call; a reset of its
// breaker on B ends the cooldown on A and C.
func TestClusterCooldownAndReset(t *testing.T) {
	hs := clusterHarnesses(t, 3)
	a, b, c := hs[0], hs[1], hs[2]
	a.up.SetFault(modelPrimary, llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: time.Hour})
	if ans := a.ask("How long do refunds take?"); ans.Source != tiers.SourceFallback {
		t.Fatalf("A answered from %s, want fallback", ans.Source)
	}
	until := a.status().Cooldowns
	if len(until) != 1 {
		t.Fatalf("A cooldowns %+v", until)
	}
	for _, h := range []*harness{b, c} {
		pollFor(t, 100*time.Millisecond, "the cooldown on another instance", func() bool {
			cs := h.status().Cooldowns
			return len(cs) == 1 && cs[0].Model == modelPrimary && cs[0].Until.Equal(until[0].Until)
		})
		ans := h.ask("Is my parcel insured?")
		if ans.Source != tiers.SourceFallback || ans.Attempts[1].Outcome != "cooling_down" {
			t.Fatalf("while cooling down: %+v", ans.Attempts)
		}
		if n := h.up.Stats(modelPrimary).Calls; n != 0 {
			t.Fatalf("%d calls reached the cooling model", n)
		}
	}

	a.up.ClearFault(modelPrimary)
	if w := b.do(http.MethodPost, "/v1/admin/breakers/reset", `{"breaker":"model/`+modelPrimary+`"}`); w.Code != http.StatusOK {
		t.Fatalf("reset: %d %s", w.Code, w.Body)
	}
	for _, h := range []*harness{a, c} {
		pollFor(t, 100*time.Millisecond, "the reset on another instance", func() bool { return len(h.status().Cooldowns) == 0 })
	}
	if ans := c.ask("Is my parcel insured?"); ans.Source != tiers.SourcePrimary {
		t.Fatalf("C after the reset answered from %s", ans.Source)
	}
}

// TestClusterReloadAndStatus: a reload on C reloads A and B; its answer
// and every instance's admin status list the three instances' versions;
// a tenant's status shows none of it.
func TestClusterReloadAndStatus(t *testing.T) {
	hs := clusterHarnesses(t, 3)
	pollFor(t, 2*time.Second, "three instances in the status", func() bool {
		st := hs[0].status().Cluster
		return st != nil && len(st.Instances) == 3
	})
	w := hs[2].do(http.MethodPost, "/v1/admin/reload", "")
	var r reloadResponse
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil || w.Code != http.StatusOK {
		t.Fatalf("reload: %d %v %s", w.Code, err, w.Body)
	}
	if !r.Reloaded || !r.Complete || r.ID == "" || r.Previous != 1 || r.Version != 2 || len(r.Members) != 3 {
		t.Fatalf("reload answer %s", w.Body)
	}
	for i, h := range hs {
		st := h.status()
		if st.KnowledgeBase.Version != 2 || st.Cluster == nil || len(st.Cluster.Instances) != 3 || !st.Cluster.Agree {
			t.Fatalf("instance %d status: version %d, cluster %+v", i, st.KnowledgeBase.Version, st.Cluster)
		}
		for _, m := range st.Cluster.Instances {
			if m.Version != 2 || m.ReloadID != r.ID {
				t.Fatalf("instance %d lists %+v, want version 2 after reload %s", i, m, r.ID)
			}
		}
	}
	tw := hs[0].doFrom(remoteClient, http.MethodGet, "/v1/status?tenant_id=acme", "")
	if tw.Code != http.StatusOK || strings.Contains(tw.Body.String(), `"cluster"`) || strings.Contains(tw.Body.String(), r.ID) {
		t.Fatalf("tenant status: %d %s", tw.Code, tw.Body)
	}
}
