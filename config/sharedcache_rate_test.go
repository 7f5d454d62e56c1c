package config

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/clock"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// evalQuestions returns the questions of the evaluation set.
func evalQuestions(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../testdata/kb-eval.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c struct {
			Question string `json:"question"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil || c.Question == "" {
			t.Fatalf("kb-eval.jsonl: %q: %v", sc.Text(), err)
		}
		qs = append(qs, c.Question)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return qs
}

// hitRate asks every question of order on the instances in turn (round
// robin) and returns the share answered by the cache. No question may
// fail. With shared caches, each question waits, up to the 1 s the shared
// cache promises, until every entry written so far has reached every other
// instance: a repeat arrives no sooner than that, as customers' repeats do
// (seconds apart), so the figure is the cache's, not the loopback's race.
func hitRate(t *testing.T, ins []*pipeline.Pipeline, order []string) float64 {
	t.Helper()
	hits := 0
	for i, q := range order {
		synced(t, ins)
		res, err := ins[i%len(ins)].Ask(context.Background(), tiers.Query{Tenant: "acme", Question: q})
		if err != nil || res.Source == tiers.SourceStatic {
			t.Fatalf("Ask(%q) = %v, %v", q, res, err)
		}
		if res.Source == tiers.SourceCache {
			hits++
		}
	}
	return float64(hits) / float64(len(order))
}

// synced waits until every shared instance of ins has written what it
// queued and read every entry the others wrote.
func synced(t *testing.T, ins []*pipeline.Pipeline) {
	t.Helper()
	waitFor(t, time.Second, "the shared entries on every instance", func() bool {
		var written uint64
		sts := make([]*pipeline.SharedCacheStatus, len(ins))
		for k, p := range ins {
			if sts[k] = shared(p); sts[k] == nil {
				return true // local caches
			}
			if sts[k].Queued > 0 {
				return false
			}
			written += sts[k].Written
		}
		for _, st := range sts {
			if st.Seen != written-st.Written {
				return false
			}
		}
		return true
	})
}

// TestSharedCacheHitRateFourInstances asks the evaluation set three times
// over, shuffled, of one instance, then of four behind a round-robin
// driver with the cache shared and with shared: false: sharing keeps the
// hit rate within 5 points of one instance's.
func TestSharedCacheHitRateFourInstances(t *testing.T) {
	redistest.Client(t)
	qs := evalQuestions(t)
	var order []string
	for range 3 {
		order = append(order, qs...)
	}
	r := rand.New(rand.NewPCG(23, 1))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	kb, err := retrieval.Open("../testdata/kb")
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(llmtest.Config{})
	t.Cleanup(srv.Close)
	cluster := func(n int, shared string) []*pipeline.Pipeline {
		yaml := strings.NewReplacer("UPSTREAM", srv.URL, "REDIS", redistest.URL(), "PREFIX", redistest.Prefix(t),
			"SHARED", shared).Replace(sharedCacheConfig)
		cfg := mustParse(t, yaml)
		var ins []*pipeline.Pipeline
		for range n {
			p := mustBuild(t, cfg, Env{Clock: clock.NewManual(epoch), KnowledgeBase: kb, Getenv: noEnv})
			if shared == "shared: true" {
				waitLoaded(t, p)
			}
			ins = append(ins, p)
		}
		return ins
	}
	start := time.Now()
	one := hitRate(t, cluster(1, "shared: false"), order)
	sharedFour := hitRate(t, cluster(4, "shared: true"), order)
	localFour := hitRate(t, cluster(4, "shared: false"), order)
	t.Logf("cache hit rate over %d questions (%d distinct, asked 3 times, shuffled): one instance %.1f%%, "+
		"four shared %.1f%%, four with shared: false %.1f%% (%v)", len(order), len(qs), 100*one, 100*sharedFour,
		100*localFour, time.Since(start).Round(time.Millisecond))
	if d := one - sharedFour; d > 0.05 || d < -0.05 {
		t.Fatalf("four shared instances hit %.1f%%, one instance %.1f%%: more than 5 points apart", 100*sharedFour, 100*one)
	}
	if localFour >= sharedFour {
		t.Fatalf("four local caches hit %.1f%%, no fewer than four shared (%.1f%%)", 100*localFour, 100*sharedFour)
	}
}
