package llmtest

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/clock"
)

// AnyModel is the model name whose fault applies to every model that has
// no fault or schedule of its own.
const AnyModel = "*"

// Config configures a Server. The zero Config is ready to use. A Server
// keeps its own copy; do not change Models while it runs.
type Config struct {
	// Clock tells the time for schedules; nil means real time. Delays
	// (latency, stall, ChunkDelay) always run on real timers.
	Clock clock.Clock
	// ChunkDelay is the pause between normal stream chunks; 0 means none.
	ChunkDelay time.Duration
	// EmbeddingDim is the length of embedding vectors when a request does
	// not ask for its own; 0 means 256, and more than MaxEmbeddingDim
	// means MaxEmbeddingDim.
	EmbeddingDim int
	// Models, if non-empty, lists the only models served; requests for
	// other models get 404 model_not_found.
	Models []string
}

// Server is a fault-injecting OpenAI-compatible server for tests, in the
// spirit of net/http/httptest. It serves /v1/chat/completions (plain and
// streamed), /v1/embeddings, /v1/models and a control API under
// /_llmtest/. Faults are set per model at run time or on a schedule.
// A Server is safe for concurrent use.
type Server struct {
	// URL is the base URL of a started server, "http://127.0.0.1:PORT/v1",
	// ready for an OpenAI client's BaseURL. It is empty until Start.
	URL string

	clock clock.Clock
	opts  Config
	mux   *http.ServeMux
	quit  chan struct{} // closed by Close: releases hung and stalled handlers
	// quitCtx ends with quit: it cuts the reads and writes of handlers
	// that are moving a body when Close is called.
	quitCtx context.Context
	endQuit context.CancelFunc
	hs      *http.Server   // set by Start
	serve   chan struct{}  // closed when hs.Serve returns
	conns   sync.WaitGroup // connection goroutines of hs, new until closed or hijacked

	// onBlock, if set (by tests, before serving), is called when a handler
	// starts waiting without a time limit.
	onBlock func()

	mu        sync.Mutex // guards the fields below
	closed    bool
	faults    map[string]Fault
	schedules map[string]schedule
	stats     map[string]*Stats
	seq       int64
	handlers  sync.WaitGroup // running handlers; Add only under mu while !closed
	held      chan struct{}  // set while breaks are held (see HoldBreaks)
}

// New returns a Server that is not listening: use it as an http.Handler
// (mounted at the root of a mux, or under a prefix with http.StripPrefix),
// or call Start.
func New(cfg Config) *Server {
	s := &Server{
		clock:     cfg.Clock,
		opts:      cfg,
		quit:      make(chan struct{}),
		faults:    map[string]Fault{},
		schedules: map[string]schedule{},
		stats:     map[string]*Stats{},
	}
	if s.clock == nil {
		s.clock = clock.System
	}
	s.quitCtx, s.endQuit = context.WithCancel(context.Background())
	if s.opts.EmbeddingDim <= 0 {
		s.opts.EmbeddingDim = 256
	}
	s.opts.EmbeddingDim = min(s.opts.EmbeddingDim, MaxEmbeddingDim)
	s.routes()
	return s
}

// NewServer returns a Server started on 127.0.0.1 at a free port. Like
// httptest.NewServer it panics if it cannot listen. Call Close when done.
func NewServer(cfg Config) *Server {
	s := New(cfg)
	if err := s.Start(); err != nil {
		panic("llmtest: " + err.Error())
	}
	return s
}

// Start listens on 127.0.0.1 at a free port, sets URL and serves in the
// background until Close.
func (s *Server) Start() error { return s.StartAt("127.0.0.1:0") }

// StartAt listens on addr (for example ":8081"), sets URL and serves in the
// background until Close. It must be called at most once, before the
// server is shared.
func (s *Server) StartAt(addr string) error {
	if s.hs != nil {
		return errors.New("llmtest: already started")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	host := "127.0.0.1"
	ta, _ := l.Addr().(*net.TCPAddr)
	if ta != nil && !ta.IP.IsUnspecified() {
		host = ta.IP.String()
	}
	port := "0"
	if ta != nil {
		_, port, _ = net.SplitHostPort(ta.String())
	}
	s.URL = "http://" + net.JoinHostPort(host, port) + "/v1"
	s.hs = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ConnState: s.connState}
	s.serve = make(chan struct{})
	go func() {
		defer close(s.serve)
		_ = s.hs.Serve(l)
	}()
	return nil
}

// Close stops the listener, if any, cuts open connections, and releases
// every hung or stalled handler at once. It returns when every handler and
// connection goroutine has returned. Requests that arrive afterwards get 503. Close is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	if s.hs != nil {
		_ = s.hs.Close()
		<-s.serve
	}
	close(s.quit)
	s.endQuit()
	s.handlers.Wait()
	s.conns.Wait()
}

// connState tracks the connection goroutines of a started server, so that
// Close can wait for them. StateNew is reported by the Serve goroutine,
// which has returned before Close waits.
func (s *Server) connState(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		s.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.conns.Done()
	}
}

// ServeHTTP serves the OpenAI-compatible endpoints under /v1/ and the
// control API under /_llmtest/.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "server_error", "server_closed", "llmtest: server closed")
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	// Close also ends a handler still reading a slow client's body or
	// writing to one that stopped reading (a mounted Server does not own
	// the connection, so it cuts its I/O rather than closing it).
	rc := http.NewResponseController(w)
	defer context.AfterFunc(s.quitCtx, func() {
		past := time.Unix(1, 0)
		_ = rc.SetReadDeadline(past)
		_ = rc.SetWriteDeadline(past)
	})()
	s.mux.ServeHTTP(w, r)
}

// SetFault sets the fault for model (AnyModel for every model without its
// own), replacing any fault or schedule it had.
func (s *Server) SetFault(model string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.schedules, model)
	s.faults[model] = f.normalized()
}

// HoldBreaks holds the cut of every ModeBreak answer: it sends what the
// fault says (After chunks, or the headers of a plain answer), then keeps
// the connection open until release is called, its request ends or the
// server is closed, and only then cuts it. A test can so act on what its
// client has received while the answer is still open, and choose the
// moment it breaks. release may be called more than once.
func (s *Server) HoldBreaks() (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.held = ch
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.held == ch {
				s.held = nil
			}
			s.mu.Unlock()
			close(ch)
		})
	}
}

// holdBreak waits before a ModeBreak cut while breaks are held (see
// HoldBreaks).
func (s *Server) holdBreak(ctx context.Context) {
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	if held != nil {
		await(s, ctx, held, false)
	}
}

// ClearFault removes the fault and schedule of model.
func (s *Server) ClearFault(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.schedules, model)
	delete(s.faults, model)
}

// ClearFaults removes every fault and schedule.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.schedules)
	clear(s.faults)
}

// Schedule replaces the fault of model by a schedule: at clock time t the
// fault in force is that of the last step with start+At <= t, and ModeOK
// before the first step. It is evaluated on each request; no goroutine
// runs. Steps need not be sorted.
func (s *Server) Schedule(model string, start time.Time, steps []Step) {
	sorted := slices.Clone(steps)
	slices.SortStableFunc(sorted, func(a, b Step) int { return cmp.Compare(a.At, b.At) })
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.faults, model)
	s.schedules[model] = schedule{start: start, steps: sorted}
}

// Fault returns the fault in force now for model: its schedule's step,
// else its own fault, else the AnyModel schedule or fault, else ModeOK.
func (s *Server) Fault(model string) Fault {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faultLocked(model, now)
}

// faultLocked needs s.mu held.
func (s *Server) faultLocked(model string, now time.Time) Fault {
	for _, m := range []string{model, AnyModel} {
		if sc, ok := s.schedules[m]; ok {
			return sc.at(now)
		}
		if f, ok := s.faults[m]; ok {
			return f
		}
	}
	return Fault{Mode: ModeOK}
}

// faultsNow returns the fault in force for every model that has a fault
// or schedule of its own.
func (s *Server) faultsNow() map[string]Fault {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Fault, len(s.faults)+len(s.schedules))
	for m := range s.faults {
		out[m] = s.faultLocked(m, now)
	}
	for m := range s.schedules {
		out[m] = s.faultLocked(m, now)
	}
	return out
}

// nextID returns a fresh response id.
func (s *Server) nextID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// knownModel reports whether model is served under Config.Models.
func (s *Server) knownModel(model string) bool {
	return len(s.opts.Models) == 0 || slices.Contains(s.opts.Models, model)
}

// wait pauses for d, or forever if d <= 0. It returns false early when the
// client goes away or the server is closed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return await[time.Time](s, ctx, nil, false)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	return await(s, ctx, t.C, true)
}

// await waits until ready delivers (never, if nil), ctx ends or the server
// is closed, and reports whether ready delivered. A wait with no time
// limit (limited false) is first reported to onBlock.
func await[T any](s *Server, ctx context.Context, ready <-chan T, limited bool) bool {
	if !limited && s.onBlock != nil {
		s.onBlock()
	}
	select {
	case <-ready:
		return true
	case <-ctx.Done():
		return false
	case <-s.quit:
		return false
	}
}
