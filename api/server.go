package api

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// Config configures a Server. Pipeline is required; every other zero
// field has a default.
type Config struct {
	// Pipeline answers the questions. Required.
	Pipeline *pipeline.Pipeline
	// Server holds the address, limits and timeouts; zero fields take the
	// defaults documented on ServerOptions.
	Server ServerOptions
	// Keys maps API keys (their values, already read from wherever they
	// are kept) to tenants. With neither Keys nor AdminKeys: no
	// authentication, the tenant comes from the request, and the admin
	// routes answer loopback clients only.
	Keys map[string]string
	// AdminKeys maps admin keys to the names their admin actions are
	// logged under. With any key configured, the admin routes and the full
	// /v1/status need one of them; a tenant's key sees its own status.
	AdminKeys map[string]string
	// Notes overrides the built-in degradation notes and actions.
	Notes Notes
	// Logger receives the request and breaker logs; nil: slog.Default().
	Logger *slog.Logger
	// Observer is the Observer the pipeline reports to. Nil: New makes
	// one, which then sees no pipeline events (only scrape-time gauges).
	Observer *Observer
	// Registry serves /metrics; it must be the registry Observer was
	// created on. Nil: a new registry (and Observer must be nil too).
	Registry *prometheus.Registry
	// Demo, if set, enables the demo-only fault routes under
	// /v1/demo/faults, which switch this upstream's faults at run time.
	Demo *llmtest.Server
	// DemoModels lists the models GET /v1/demo/faults reports.
	DemoModels []string
	// OpenAI configures the OpenAI-compatible front door.
	OpenAI OpenAIOptions
	// StreamHeartbeat is how often a streamed answer with nothing to send
	// writes a ": ping" comment (a blank line on /v1/chat/completions);
	// default DefaultStreamHeartbeat.
	StreamHeartbeat time.Duration
	// Console configures the web console (GET /console).
	Console ConsoleOptions
	// Tracer, if set, records a span per question, "question", continuing
	// the W3C traceparent of the request; the pipeline's own spans (see
	// pipeline.Options.Tracer) are its children. Nil traces nothing.
	Tracer trace.Tracer
	// APIKeyEnvs maps a model's ID to the environment variable its API
	// key is read from, for the warning logged when the model refuses the
	// key (401/403). The keys themselves are never given to the server.
	APIKeyEnvs map[string]string
}

// ConsoleOptions configures the web console.
type ConsoleOptions struct {
	// ShowQuestions puts each question's text in the console's feed of the
	// latest questions; default false: source, attempts and durations only.
	ShowQuestions bool
}

// OpenAIOptions configure /v1/chat/completions.
type OpenAIOptions struct {
	// NoteInContent appends the degradation note to the message content
	// (after a blank line), for plain OpenAI clients that never read the
	// ragfuse field; default false.
	NoteInContent bool
}

// Server is the ragfuse HTTP server. It is safe for concurrent use.
type Server struct {
	p      *pipeline.Pipeline
	srv    ServerOptions
	lim    limits
	keys   *keyring
	notes  *notebook
	log    *slog.Logger
	obs    *Observer
	reg    *prometheus.Registry
	demo   *llmtest.Server
	models []string
	e      *echo.Echo

	openai  OpenAIOptions
	started time.Time // GET /v1/models's "created"

	heartbeat   time.Duration // see Config.StreamHeartbeat
	consoleOpts ConsoleOptions
	tracer      trace.Tracer // nil: no spans
	feed        feed         // the console's history and live questions

	draining atomic.Bool   // set when shutdown begins: /readyz turns 503
	quit     chan struct{} // closed when shutdown begins: the live feeds end
	quitOnce sync.Once
}

// New returns a Server for cfg. It fails on a missing pipeline, a bad
// notes override, or a Registry that does not match the Observer.
func New(cfg Config) (*Server, error) {
	if cfg.Pipeline == nil {
		return nil, errors.New("api: Config.Pipeline is required")
	}
	sc := cfg.Server.withDefaults()
	nb, err := newNotebook(sc.DefaultLanguage, cfg.Notes)
	if err != nil {
		return nil, err
	}
	for k, t := range cfg.Keys {
		if k == "" || !validTenant(t) {
			return nil, errors.New("api: Config.Keys holds an empty key or an invalid tenant")
		}
	}
	for k, name := range cfg.AdminKeys {
		if _, tenant := cfg.Keys[k]; k == "" || tenant || !validTenant(name) {
			return nil, errors.New("api: Config.AdminKeys holds an empty key, a tenant's key or an invalid name")
		}
	}
	s := &Server{
		p: cfg.Pipeline, srv: sc,
		lim: limits{maxBody: sc.MaxBodyBytes, maxQuestion: sc.MaxQuestionBytes,
			historyTurns: sc.MaxHistoryTurns, historyBytes: sc.MaxHistoryBytes},
		keys:  newKeyring(cfg.Keys, cfg.AdminKeys),
		notes: nb, log: cfg.Logger, obs: cfg.Observer, reg: cfg.Registry,
		demo: cfg.Demo, models: cfg.DemoModels,
		heartbeat: cfg.StreamHeartbeat,
		openai:    cfg.OpenAI, started: time.Now(),
		consoleOpts: cfg.Console,
		tracer:      cfg.Tracer,
		quit:        make(chan struct{}),
	}
	if s.heartbeat <= 0 {
		s.heartbeat = DefaultStreamHeartbeat
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	switch {
	case s.obs == nil && s.reg == nil:
		s.reg = prometheus.NewRegistry()
		s.obs = NewObserver(s.reg, s.log)
	case s.obs == nil || s.reg == nil:
		return nil, errors.New("api: set both Config.Observer and Config.Registry, or neither")
	}
	s.obs.attach(s.p.Status)
	s.obs.setKeyEnvs(cfg.APIKeyEnvs)
	s.e = s.routes()
	return s, nil
}

// ServerOptions are the server's address, limits and timeouts. A zero or
// negative field takes the default written beside it.
type ServerOptions struct {
	Addr             string        // listen address; default "127.0.0.1:8080"
	MaxQuestionBytes int           // a longer question gets 413 question_too_long; default 4096
	MaxBodyBytes     int           // a larger body gets 413 body_too_large; default 64 KiB
	ShutdownGrace    time.Duration // time in-flight requests get once shutdown begins; default 15s
	DrainDelay       time.Duration // time /readyz is 503 before the listener closes; default 0
	DefaultLanguage  string        // notes language without a matching Accept-Language or a question in a known script; default "zh"
	MaxHistoryTurns  int           // turns of a question's history kept, the older dropped; default DefaultMaxHistoryTurns
	MaxHistoryBytes  int           // bytes of the history kept; more gets 413 history_too_long; default DefaultMaxHistoryBytes
	// ReadTimeout bounds how long a request's headers and body take to
	// arrive: a body still arriving then gets 408 timeout_reading_request
	// and the connection is closed. The answer, streamed or not, is not
	// bound by it. Default 10s.
	ReadTimeout time.Duration
	IdleTimeout time.Duration // a kept-alive connection without a request is closed after it; default 120s
	// MaxConnections bounds the connections open at once; one more waits
	// up to a second for another to close, then is closed. Default 10000.
	MaxConnections int
}

// withDefaults returns o with its unset fields filled.
func (o ServerOptions) withDefaults() ServerOptions {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:8080"
	}
	if o.MaxQuestionBytes <= 0 {
		o.MaxQuestionBytes = 4096
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 64 << 10
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 15 * time.Second
	}
	o.DrainDelay = max(o.DrainDelay, 0)
	if o.DefaultLanguage == "" {
		o.DefaultLanguage = "zh"
	}
	if o.MaxHistoryTurns <= 0 {
		o.MaxHistoryTurns = DefaultMaxHistoryTurns
	}
	if o.MaxHistoryBytes <= 0 {
		o.MaxHistoryBytes = DefaultMaxHistoryBytes
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = 10000
	}
	return o
}

// routes builds the echo instance.
func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(withRequestID, s.countRequests, s.recoverPanics)

	e.GET("/", s.toConsole)
	e.GET("/console", s.console)
	e.GET("/console/*", s.console)
	e.Match([]string{http.MethodGet, http.MethodHead}, "/healthz", s.healthz)
	e.Match([]string{http.MethodGet, http.MethodHead}, "/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})))

	// Authentication is route middleware, not group middleware: echo
	// gives a group with middleware a catch-all route, which would turn
	// 405s into 404s.
	v1 := e.Group("/v1")
	auth := s.authenticate
	v1.POST("/ask", s.ask, auth)
	v1.POST("/ask/stream", s.askStream, auth)
	v1.POST("/chat/completions", s.chatCompletions, auth)
	v1.GET("/models", s.listModels, auth)
	v1.GET("/models/:id", s.modelByID, auth)
	v1.GET("/status", s.status)              // full for an admin, a tenant's own otherwise
	v1.GET("/events", s.events, s.adminOnly) // every tenant's questions: an admin's only
	v1.POST("/admin/reload", s.reload, s.adminOnly)
	v1.POST("/admin/breakers/trip", s.tripBreaker, s.adminOnly)
	v1.POST("/admin/breakers/reset", s.resetBreaker, s.adminOnly)
	if s.demo != nil {
		v1.GET("/demo/faults", s.demoFaults, auth)
		v1.DELETE("/demo/faults", s.demoClearFaults, auth)
		v1.GET("/demo/faults/:model", s.demoFault, auth)
		v1.PUT("/demo/faults/:model", s.demoSetFault, auth)
		v1.DELETE("/demo/faults/:model", s.demoClearFault, auth)
	}
	return e
}

// Handler returns the server's HTTP handler (the echo instance).
func (s *Server) Handler() http.Handler { return s.e }

// Observer returns the Observer that feeds the server's metrics.
func (s *Server) Observer() *Observer { return s.obs }

// Addr returns the configured listen address.
func (s *Server) Addr() string { return s.srv.Addr }

// ListenAndServe listens on the configured address and serves until ctx
// is done, then shuts down gracefully (see Serve).
func (s *Server) ListenAndServe(ctx context.Context) error {
	l, err := net.Listen("tcp", s.srv.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, l)
}

// Serve serves on l, at most MaxConnections at once, until ctx is done.
// It then marks the server not ready (/readyz 503) and turns keep-alives
// off (idle connections are closed, every response carries Connection:
// close), and goes on serving for the drain delay, so that load balancers
// and clients move to another instance; then it stops accepting
// connections and waits up to the shutdown grace for in-flight requests
// to finish before cutting the rest. It returns nil after a clean
// shutdown.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	hs := &http.Server{
		Handler: s.e,
		// The headers and the body must arrive within ReadTimeout (it bounds
		// the headers too, ReadHeaderTimeout being unset); once the body is
		// read, net/http lifts the deadline, so the answer is not bound by it.
		ReadTimeout: s.srv.ReadTimeout,
		IdleTimeout: s.srv.IdleTimeout,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	ll := newLimitListener(l, s.srv.MaxConnections, connectionWait, s.obs.connectionRefused)
	s.obs.attachConnections(ll.Open)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ll) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	hs.SetKeepAlivesEnabled(false)
	s.draining.Store(true)
	s.quitOnce.Do(func() { close(s.quit) })
	if d := s.srv.DrainDelay; d > 0 {
		s.log.Info("draining: not ready, still serving", slog.Duration("drain_delay", d))
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case err := <-errc:
			t.Stop()
			return err
		}
	}
	s.log.Info("shutting down", slog.Duration("grace", s.srv.ShutdownGrace))
	sctx, cancel := context.WithTimeout(context.Background(), s.srv.ShutdownGrace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		s.log.Warn("grace period over; closing remaining connections", slog.String("error", err.Error()))
		_ = hs.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // the remaining requests were cut, as configured
	}
	return err
}
