package drill

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// segmentWatch snapshots the upstream's counters at every step of the
// fault timelines, so that each model's calls and tokens can be told
// apart by whether the model was failing. It is safe for concurrent use.
type segmentWatch struct {
	llm    *llmtest.Server
	sc     *Scenario
	names  map[string]string // provider model name -> config.models key
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex // guards snaps
	snaps []snapshot
}

// snapshot is the upstream's counters at a scenario time.
type snapshot struct {
	at    time.Duration
	stats map[string]llmtest.Stats // by config.models key
}

// watchSegments starts snapshotting at the end of the warm-up and at
// every step time of the scenario's timelines.
func watchSegments(ctx context.Context, llm *llmtest.Server, sc *Scenario, cfg pipeline.Config, cs clockScale) *segmentWatch {
	w := &segmentWatch{llm: llm, sc: sc, names: map[string]string{}, done: make(chan struct{})}
	for k, m := range cfg.Models {
		w.names[m.Model] = k
	}
	times := []time.Duration{0}
	for _, steps := range sc.Faults {
		for _, s := range steps {
			if s.At > 0 && s.At < sc.Load.Duration {
				times = append(times, s.At)
			}
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	ctx, w.cancel = context.WithCancel(ctx)
	go func() {
		defer close(w.done)
		timer := time.NewTimer(0)
		defer timer.Stop()
		for _, at := range times {
			real := cs.zero.Add(time.Duration(float64(at) / cs.speed))
			timer.Reset(time.Until(real))
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			w.snap(at)
		}
	}()
	return w
}

func (w *segmentWatch) snap(at time.Duration) {
	all := w.llm.AllStats()
	s := snapshot{at: at, stats: map[string]llmtest.Stats{}}
	for name, st := range all {
		if k, ok := w.names[name]; ok {
			s.stats[k] = st
		}
	}
	w.mu.Lock()
	w.snaps = append(w.snaps, s)
	w.mu.Unlock()
}

// finish takes the last snapshot, stops the watch and returns each
// model's segments between snapshots.
func (w *segmentWatch) finish() []segment {
	w.cancel()
	<-w.done
	w.snap(w.sc.Load.Duration)
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []segment
	for i := 1; i < len(w.snaps); i++ {
		prev, cur := w.snaps[i-1], w.snaps[i]
		for _, k := range slices.Sorted(maps.Keys(cur.stats)) {
			out = append(out, segment{model: k, failing: w.failingAt(k, prev.at), stats: sub(cur.stats[k], prev.stats[k])})
		}
	}
	return out
}

// failingAt reports whether model k is failing at scenario time t.
func (w *segmentWatch) failingAt(k string, t time.Duration) bool {
	failing := false
	for _, s := range w.sc.Faults[k] {
		if s.At > t {
			break
		}
		failing = s.IsFailing()
	}
	return failing
}

func sub(a, b llmtest.Stats) llmtest.Stats {
	return llmtest.Stats{
		Calls:            a.Calls - b.Calls,
		StreamCalls:      a.StreamCalls - b.StreamCalls,
		EmbeddingCalls:   a.EmbeddingCalls - b.EmbeddingCalls,
		Faulted:          a.Faulted - b.Faulted,
		PromptTokens:     a.PromptTokens - b.PromptTokens,
		CompletionTokens: a.CompletionTokens - b.CompletionTokens,
		Chunks:           a.Chunks - b.Chunks,
	}
}
