package drill

import (
	"context"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// upstream is the drill's in-process model service: each config.models
// entry is served under /m/<key>/ and follows a fault timeline of its own.
// When a request arrives, the upstream reads its clock once, finds the
// phase of the model's timeline in force at that scenario time, records a
// chat call under that phase and has the phase's own llmtest.Server serve
// it with the phase's fault. The fault a call meets and the counters it
// lands in are thus one decision: no call can meet one fault and be counted
// under another. It is safe for concurrent use.
type upstream struct {
	now  func() time.Time // the clock calls are classified by
	hs   *http.Server
	base string // "http://127.0.0.1:PORT"
	done chan struct{}

	mu       sync.Mutex // guards the fields below
	cs       clockScale
	phases   map[string][]*phase // by config.models key, sorted by from
	servers  []*llmtest.Server   // every phase's, to close
	arrivals []arrival           // chat calls, in scenario time
}

// phase is a part of one model's timeline: from scenario time from until
// the next phase's, the model's calls meet fault and are served and
// counted by srv.
type phase struct {
	from    time.Duration
	fault   llmtest.Fault // already scaled to real time
	warmup  bool          // before the measured window: in no segment
	failing bool
	srv     *llmtest.Server
	serve   http.Handler // srv under the model's prefix
}

// newUpstream starts an upstream serving the models keyed by keys, each
// healthy until play sets the timelines. now is its clock; nil means
// time.Now.
func newUpstream(keys []string, now func() time.Time) (*upstream, error) {
	if now == nil {
		now = time.Now
	}
	u := &upstream{now: now, done: make(chan struct{}), phases: map[string][]*phase{}}
	mux := http.NewServeMux()
	for _, k := range keys {
		u.phases[k] = u.newPhases(k, []phase{{from: math.MinInt64}})
		mux.Handle("/m/"+k+"/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u.phaseFor(k, r).serve.ServeHTTP(w, r)
		}))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		u.closeServers()
		return nil, err
	}
	u.base = "http://" + ln.Addr().String()
	u.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(u.done)
		_ = u.hs.Serve(ln) // ends with http.ErrServerClosed on close
	}()
	return u, nil
}

// newPhases gives each of specs a server of its own mounted under model
// k's prefix. It must be called with u.mu held or before u is shared.
func (u *upstream) newPhases(k string, specs []phase) []*phase {
	out := make([]*phase, len(specs))
	for i, p := range specs {
		p.srv = llmtest.New(llmtest.Config{})
		p.srv.SetFault(llmtest.AnyModel, p.fault)
		p.serve = http.StripPrefix("/m/"+k, p.srv)
		u.servers = append(u.servers, p.srv)
		out[i] = &p
	}
	return out
}

// phaseFor returns the phase of model k in force now, and records r under
// it when r is a chat call.
func (u *upstream) phaseFor(k string, r *http.Request) *phase {
	u.mu.Lock()
	defer u.mu.Unlock()
	at := u.cs.at(u.now())
	p := phaseAt(u.phases[k], at)
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions") {
		u.arrivals = append(u.arrivals, arrival{at: at, model: k, failing: p.failing})
	}
	return p
}

// phaseAt returns the last phase of ps starting at or before at; the
// first phase of every timeline starts at the earliest time there is.
func phaseAt(ps []*phase, at time.Duration) *phase {
	i := len(ps) - 1
	for i > 0 && ps[i].from > at {
		i--
	}
	return ps[i]
}

// play sets every model's timeline: scenario time is read on cs, and the
// fault of model k at scenario time t is that of the last step of
// faults[k] at or before t (see timeline). Call it once, before the load
// starts.
func (u *upstream) play(cs clockScale, faults map[string][]Step, speed float64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.cs = cs
	for k := range u.phases {
		u.phases[k] = u.newPhases(k, timeline(faults[k], speed))
	}
}

// timeline returns a model's phases for its fault steps, faults scaled by
// speed: the warm-up, healthy or in the first step's fault when that one
// is healthy from 0; a healthy phase from 0 until the first step when
// that comes later; then one phase per step.
func timeline(steps []Step, speed float64) []phase {
	warm := phase{from: math.MinInt64, warmup: true}
	if len(steps) > 0 && steps[0].At == 0 && !steps[0].IsFailing() {
		warm.fault = scaleFault(steps[0].Fault(), speed)
	}
	out := []phase{warm}
	if len(steps) == 0 || steps[0].At > 0 {
		out = append(out, phase{from: 0})
	}
	for _, s := range steps {
		out = append(out, phase{from: s.At, fault: scaleFault(s.Fault(), speed), failing: s.IsFailing()})
	}
	return out
}

func scaleFault(f llmtest.Fault, speed float64) llmtest.Fault {
	f.Delay = scaleDur(f.Delay, speed)
	f.RetryAfter = scaleDur(f.RetryAfter, speed)
	return f
}

// segments returns each model's counters per phase of its timeline, the
// warm-up left out, by model key and then by time.
func (u *upstream) segments() []segment {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []segment
	for _, k := range slices.Sorted(maps.Keys(u.phases)) {
		for _, p := range u.phases[k] {
			if !p.warmup {
				out = append(out, segment{model: k, failing: p.failing, stats: total(p.srv)})
			}
		}
	}
	return out
}

// stats returns what model k's phases served, the warm-up included.
func (u *upstream) stats(k string) llmtest.Stats {
	u.mu.Lock()
	defer u.mu.Unlock()
	var sum llmtest.Stats
	for _, p := range u.phases[k] {
		sum = add(sum, total(p.srv))
	}
	return sum
}

// total returns what srv served, whatever model names it was asked for.
func total(srv *llmtest.Server) llmtest.Stats {
	var sum llmtest.Stats
	for _, st := range srv.AllStats() {
		sum = add(sum, st)
	}
	return sum
}

func add(a, b llmtest.Stats) llmtest.Stats {
	return llmtest.Stats{
		Calls:            a.Calls + b.Calls,
		StreamCalls:      a.StreamCalls + b.StreamCalls,
		EmbeddingCalls:   a.EmbeddingCalls + b.EmbeddingCalls,
		Faulted:          a.Faulted + b.Faulted,
		PromptTokens:     a.PromptTokens + b.PromptTokens,
		CompletionTokens: a.CompletionTokens + b.CompletionTokens,
		Chunks:           a.Chunks + b.Chunks,
	}
}

// baseURL returns the OpenAI base URL of the model keyed k.
func (u *upstream) baseURL(k string) string { return u.base + "/m/" + k + "/v1" }

// takeArrivals returns the chat calls recorded so far, in scenario time.
func (u *upstream) takeArrivals() []arrival {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.arrivals)
}

// closeServers releases the hung handlers of every phase.
func (u *upstream) closeServers() {
	u.mu.Lock()
	servers := slices.Clone(u.servers)
	u.mu.Unlock()
	for _, s := range servers {
		s.Close()
	}
}

// close releases hung handlers, then stops the server.
func (u *upstream) close() {
	u.closeServers()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := u.hs.Shutdown(ctx); err != nil {
		u.hs.Close()
	}
	<-u.done
}
