package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// fakeCluster is a Cluster in memory: it records what the pipeline
// shares and answers Members from others plus the last self shared.
type fakeCluster struct {
	mu       sync.Mutex
	shared   []CooldownStatus // ShareCooldown calls, in order
	self     *Member
	others   func(id string) []Member // the other instances, given the last reload id
	failWith error                    // returned by ShareReload and Members
}

func (f *fakeCluster) ShareCooldown(model string, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shared = append(f.shared, CooldownStatus{Model: model, Until: until})
}

func (f *fakeCluster) ShareReload(_ context.Context, self Member) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return f.failWith
	}
	f.self = &self
	return nil
}

func (f *fakeCluster) Members(context.Context) ([]Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return nil, f.failWith
	}
	var out []Member
	id := ""
	if f.self != nil {
		out = append(out, *f.self)
		id = f.self.ReloadID
	}
	if f.others != nil {
		out = append(out, f.others(id)...)
	}
	return out, nil
}

func (f *fakeCluster) cooldowns() []CooldownStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]CooldownStatus(nil), f.shared...)
}

// TestCooldownsSharedWithTheCluster guards the pipeline's half of shared
// cooldowns: a 429 announces its absolute until-time, a shorter one does
// not, a cooldown announced by another instance skips the model without a
// call until that time, and EndCooldown announces the end.
func TestCooldownsSharedWithTheCluster(t *testing.T) {
	fc := &fakeCluster{}
	r := newRig(t, Options{Cluster: fc})
	r.srv.SetFault(bigModel, llmtest.Fault{Mode: llmtest.ModeRateLimit, RetryAfter: 5 * time.Second})
	r.ask(t, "q1")
	until := r.clk.Now().Add(5 * time.Second)
	if got := fc.cooldowns(); len(got) != 1 || got[0].Model != bigModel || !got[0].Until.Equal(until) {
		t.Fatalf("shared %+v, want %s until %v", got, bigModel, until)
	}
	r.p.coolDown(bigModel, nil, time.Second) // shorter than the one in force
	if got := fc.cooldowns(); len(got) != 1 {
		t.Fatalf("a shorter cooldown was announced: %+v", got)
	}

	// A cooldown from elsewhere: skipped without a call until its end.
	r.srv.ClearFault(bigModel)
	calls := r.srv.Stats(bigModel).Calls
	remote := r.clk.Now().Add(time.Minute)
	r.p.ApplyCooldown(bigModel, remote)
	r.clk.Advance(59 * time.Second)
	if res := r.ask(t, "q2"); res.Attempts[0].Outcome != outcomeCoolingDown || r.srv.Stats(bigModel).Calls != calls {
		t.Fatalf("under a remote cooldown: %v, %d calls", outcomes(res), r.srv.Stats(bigModel).Calls-calls)
	}
	if got := fc.cooldowns(); len(got) != 1 {
		t.Fatalf("a remote cooldown was announced again: %+v", got)
	}
	r.clk.Advance(time.Second)
	if res := r.ask(t, "q3"); res.Source != tiers.SourcePrimary {
		t.Fatalf("at the remote cooldown's end: %v", outcomes(res))
	}

	// A remote end, then a local end announced.
	r.p.ApplyCooldown(bigModel, r.clk.Now().Add(time.Hour))
	r.p.ApplyCooldown(bigModel, time.Time{})
	if res := r.ask(t, "q4"); res.Source != tiers.SourcePrimary {
		t.Fatalf("after a remote end: %v", outcomes(res))
	}
	r.p.EndCooldown(bigModel)
	if got := fc.cooldowns(); len(got) != 2 || got[1].Model != bigModel || !got[1].Until.IsZero() {
		t.Fatalf("EndCooldown shared %+v, want the end of %s", got, bigModel)
	}
}

// newKBPipeline returns a pipeline over a knowledge base in a temporary
// folder, with cluster fc.
func newKBPipeline(t *testing.T, fc Cluster) (*Pipeline, *retrieval.KnowledgeBase, string) {
	t.Helper()
	dir := t.TempDir()
	writeKB(t, dir, "first text")
	kb, err := retrieval.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := newTestPipeline(t, Options{KnowledgeBase: kb, Cluster: fc,
		Tiers: []Stage{{Tier: tiers.NewRetrieval(tiers.RetrievalConfig{Retriever: kb})}, {Tier: tiers.NewStatic("static", "")}}})
	return p, kb, dir
}

func TestReloadCluster(t *testing.T) {
	t.Run("every instance reports", func(t *testing.T) {
		fc := &fakeCluster{others: func(id string) []Member { return []Member{{Instance: "b", ReloadID: id, Digest: "x"}} }}
		p, kb, _ := newKBPipeline(t, fc)
		r, err := p.ReloadCluster(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !r.Complete || r.ID == "" || r.Previous != 1 || r.Version != 2 || len(r.Members) != 2 || r.Error != "" {
			t.Fatalf("reload %+v, want complete, 1 -> 2, two members", r)
		}
		if fc.self.ReloadID != r.ID || fc.self.Version != 2 || fc.self.Digest != kb.Digest() {
			t.Fatalf("self shared %+v, want reload %s at version 2, digest %s", *fc.self, r.ID, kb.Digest())
		}
		if st := p.ClusterStatus(context.Background()); st.Agree || len(st.Instances) != 2 {
			t.Fatalf("status %+v: two digests must not agree", st)
		}
	})
	t.Run("an instance lags", func(t *testing.T) {
		fc := &fakeCluster{others: func(string) []Member { return []Member{{Instance: "b", ReloadID: "older"}} }}
		p, _, _ := newKBPipeline(t, fc)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		r, err := p.ReloadCluster(ctx)
		if err != nil || r.Complete || len(r.Members) != 2 {
			t.Fatalf("reload %+v, %v; want incomplete with both members", r, err)
		}
	})
	t.Run("cluster unreachable", func(t *testing.T) {
		fc := &fakeCluster{failWith: errors.New("redis unavailable")}
		p, _, _ := newKBPipeline(t, fc)
		r, err := p.ReloadCluster(context.Background())
		if err != nil || r.Complete || r.Version != 2 || r.Error != "redis unavailable" {
			t.Fatalf("reload %+v, %v; want a local reload to 2 and the cluster's error", r, err)
		}
		if st := p.ClusterStatus(context.Background()); st.Error == "" || st.Agree || st.Instances == nil {
			t.Fatalf("status %+v, want the error and an empty list", st)
		}
	})
	t.Run("local failure asks nothing", func(t *testing.T) {
		fc := &fakeCluster{}
		p, _, dir := newKBPipeline(t, fc)
		breakKB(t, dir)
		if _, err := p.ReloadCluster(context.Background()); err == nil || fc.self != nil {
			t.Fatalf("ReloadCluster = %v, shared %+v; want an error and nothing shared", err, fc.self)
		}
	})
	t.Run("alone", func(t *testing.T) {
		p, _, _ := newKBPipeline(t, nil)
		r, err := p.ReloadCluster(context.Background())
		if err != nil || !r.Complete || r.ID != "" || r.Version != 2 || p.ClusterStatus(context.Background()) != nil {
			t.Fatalf("reload %+v, %v; want a plain local reload and no cluster status", r, err)
		}
	})
}

// TestReloadFromCluster guards a reload another instance asked for: the
// state returned carries its id and new version, or its failure.
func TestReloadFromCluster(t *testing.T) {
	p, kb, dir := newKBPipeline(t, nil)
	before := kb.Digest()
	writeKB(t, dir, "second text")
	if m := p.ReloadFromCluster("r1"); m.ReloadID != "r1" || m.Version != 2 || m.Digest == before || m.Error != "" {
		t.Fatalf("state %+v, want r1 at version 2 with a new digest", m)
	}
	breakKB(t, dir)
	if m := p.ReloadFromCluster("r2"); m.ReloadID != "r2" || m.Version != 2 || m.Error == "" {
		t.Fatalf("state %+v, want r2's failure at version 2", m)
	}
}

// writeKB writes the one article of a knowledge base in dir.
func writeKB(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n"+text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// breakKB adds a malformed file to the knowledge base in dir, so that its
// next reload fails.
func breakKB(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
