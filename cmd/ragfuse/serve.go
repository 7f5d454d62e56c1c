package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragfuse/ragfuse"
	"github.com/ragfuse/ragfuse/api"
	"github.com/ragfuse/ragfuse/breaker/redisstore"
	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/retrieval"
	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// serveOptions are the flags of serve.
type serveOptions struct {
	config string       // config file; "" runs the demo
	addr   string       // overrides server.addr
	faults []modelFault // demo only: initial faults
}

// app is an assembled server: what serve runs and what tests start.
type app struct {
	server   *api.Server
	pipeline *pipeline.Pipeline
	upstream *llmtest.Server          // the demo's simulated models; nil with a config
	tracing  *sdktrace.TracerProvider // nil: tracing is off
	addr     string
}

// Close releases the pipeline and the demo upstream, and sends the last
// spans.
func (a *app) Close() {
	_ = a.pipeline.Close()
	if a.upstream != nil {
		a.upstream.Close()
	}
	if a.tracing != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.tracing.Shutdown(ctx)
	}
}

// assemble builds the server serve runs: from a config file, or the
// embedded demo without one.
func assemble(o serveOptions, logger *slog.Logger, getenv func(string) string) (*app, error) {
	var (
		cfg      config.Config
		upstream *llmtest.Server
		kb       *retrieval.KnowledgeBase
		err      error
	)
	if o.config == "" {
		upstream = newDemoUpstream()
		for _, f := range o.faults {
			upstream.SetFault(f.model, f.fault)
		}
		cfg = demoConfig(upstream.URL)
		kb, err = retrieval.OpenFS(ragfuse.KnowledgeBase, "testdata/kb")
		if err != nil {
			upstream.Close()
			return nil, fmt.Errorf("embedded knowledge base: %w", err)
		}
	} else if cfg, err = config.Load(o.config); err != nil {
		return nil, err
	}
	if o.addr != "" {
		cfg.Server.Addr = o.addr
	}
	a := &app{upstream: upstream}
	fail := func(err error) (*app, error) {
		if a.pipeline != nil {
			a.Close()
		} else if upstream != nil {
			upstream.Close()
		}
		return nil, err
	}
	keys, err := config.ResolveKeys(cfg.Auth, getenv)
	if err != nil {
		return fail(err)
	}
	adminKeys, err := config.ResolveAdminKeys(cfg.Auth, getenv)
	if err != nil {
		return fail(err)
	}
	tracer, err := startTracing(a, cfg.Tracing, getenv, logger)
	if err != nil {
		return fail(err)
	}
	reg := prometheus.NewRegistry()
	obs := api.NewObserver(reg, logger)
	a.pipeline, err = config.Build(cfg, config.Env{Getenv: getenv, Observer: obs, KnowledgeBase: kb, Logger: logger,
		Tracer: tracer})
	if err != nil {
		return fail(err)
	}
	acfg := api.Config{Pipeline: a.pipeline, Server: serverOptions(cfg.Server), Keys: keys, AdminKeys: adminKeys, Notes: notes(cfg.Notes),
		OpenAI: api.OpenAIOptions{NoteInContent: cfg.OpenAI.NoteInContent},
		Logger: logger, Observer: obs, Registry: reg, Tracer: tracer, Console: api.ConsoleOptions{ShowQuestions: cfg.Console.ShowQuestions},
		APIKeyEnvs: apiKeyEnvs(cfg.Models)}
	if upstream != nil {
		acfg.Demo, acfg.DemoModels = upstream, demoModels
	}
	if a.server, err = api.New(acfg); err != nil {
		return fail(err)
	}
	a.addr = a.server.Addr()
	return a, nil
}

// startTracing starts the tracer provider of the tracing: section (or of
// OTEL_EXPORTER_OTLP_ENDPOINT) into a, and returns its tracer; nil when
// tracing is off. Export errors are logged as warnings.
func startTracing(a *app, t config.Tracing, getenv func(string) string, logger *slog.Logger) (trace.Tracer, error) {
	tp, err := api.NewTracerProvider(context.Background(),
		api.Tracing{OTLPEndpoint: t.OTLPEndpoint, ServiceName: t.ServiceName, SampleRatio: t.SampleRatio}, getenv)
	if err != nil || tp == nil {
		return nil, err
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("tracing: spans not exported", slog.String("error", err.Error()))
	}))
	a.tracing = tp
	return tp.Tracer("github.com/ragfuse/ragfuse"), nil
}

// apiKeyEnvs maps each model to the variable its API key is read from.
func apiKeyEnvs(models map[string]config.Model) map[string]string {
	out := make(map[string]string, len(models))
	for id, m := range models {
		out[id] = m.APIKeyEnv
	}
	return out
}

// serverOptions maps the configuration's server: section onto the
// server's options.
func serverOptions(s config.Server) api.ServerOptions {
	return api.ServerOptions{Addr: s.Addr, MaxQuestionBytes: s.MaxQuestionBytes, MaxBodyBytes: s.MaxBodyBytes,
		ShutdownGrace: s.ShutdownGrace, DrainDelay: s.DrainDelay, DefaultLanguage: s.DefaultLanguage,
		MaxHistoryTurns: s.MaxHistoryTurns, MaxHistoryBytes: s.MaxHistoryBytes,
		ReadTimeout: s.ReadTimeout, IdleTimeout: s.IdleTimeout, MaxConnections: s.MaxConnections}
}

// notes maps the configuration's notes: section onto the server's.
func notes(n config.Notes) api.Notes {
	out := make(api.Notes, len(n))
	for lang, bySource := range n {
		out[lang] = make(map[string]api.NoteOverride, len(bySource))
		for src, o := range bySource {
			out[lang][src] = api.NoteOverride{Text: o.Note, Refresh: o.Refresh, RetryLater: o.RetryLater,
				CustomerService: o.CustomerService}
		}
	}
	return out
}

// runServe runs the HTTP server until ctx is done.
func runServe(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("serve", "[--config FILE] [--addr ADDR] [--demo-faults model=mode,...] [--log-json]", e)
	var o serveOptions
	fs.StringVar(&o.config, "config", "", "YAML config file; without it, run the embedded demo")
	fs.StringVar(&o.addr, "addr", "", "listen address, overriding server.addr (default 127.0.0.1:8080)")
	faults := fs.String("demo-faults", "", "demo only: initial faults, "+faultSyntax)
	logJSON := fs.Bool("log-json", false, "write logs as JSON lines instead of text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var err error
	if o.faults, err = parseFaults(*faults); err != nil {
		fmt.Fprintf(e.stderr, "--demo-faults: %v\n", err)
		return errUsage
	}
	if len(o.faults) > 0 && o.config != "" {
		fmt.Fprintln(e.stderr, "--demo-faults applies to the demo only; with --config use `ragfuse chaos` as the upstream")
		return errUsage
	}
	for _, f := range o.faults {
		if f.model != llmtest.AnyModel && !contains(demoModels, f.model) {
			fmt.Fprintf(e.stderr, "--demo-faults: unknown model %q (demo models: %s)\n", f.model, strings.Join(demoModels, ", "))
			return errUsage
		}
	}
	logger := newLogger(e.stderr, *logJSON)
	redisstore.SetDriverLogger(logger) // the shared store reports Redis outages itself, once

	a, err := assemble(o, logger, e.getenv)
	if err != nil {
		return err
	}
	defer a.Close()
	l, err := net.Listen("tcp", a.addr)
	if err != nil {
		return err
	}
	url := "http://" + l.Addr().String()
	if a.upstream != nil {
		demoBanner(e.stderr, url, o.faults)
	}
	logger.Info("ragfuse listening", slog.String("url", url), slog.Bool("demo", a.upstream != nil),
		slog.String("config", o.config))
	if e.listening != nil {
		e.listening(url)
	}
	err = a.server.Serve(ctx, l)
	logger.Info("ragfuse stopped")
	return err
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// newLogger returns the process logger, text or JSON, on w.
func newLogger(w io.Writer, asJSON bool) *slog.Logger {
	if asJSON {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// demoBanner tells a newcomer what is running and what to try.
func demoBanner(w io.Writer, url string, faults []modelFault) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("ragfuse DEMO: embedded knowledge base, hash embedder, and simulated models %q and %q", demoPrimary, demoFallback)
	p("served in process. Nothing here calls a real model.")
	p("")
	p("Listening on %s.", url)
	p("")
	p("  Open the web console in a browser: %s/console", url)
	p("  (ask questions, switch the simulated models' faults, watch the breakers open and close)")
	p("")
	p("  Or try with curl:")
	p("")
	p("  # 1. ask a question (answered by the primary model)")
	p(`  curl -s %s/v1/ask -H 'Content-Type: application/json' -d '{"question":"How do I return an item?"}'`, url)
	p("")
	p("  # 2. make the primary model hang")
	p(`  curl -s -X PUT %s/v1/demo/faults/%s -H 'Content-Type: application/json' -d '{"mode":"hang"}'`, url, demoPrimary)
	p("")
	p("  # 3. ask again (a new question: the first answer is now in the semantic cache) -> source: fallback")
	p(`  curl -s %s/v1/ask -H 'Content-Type: application/json' -d '{"question":"How long does a refund take?"}'`, url)
	p("")
	p("  Make %s hang too and new questions get knowledge-base articles (source: retrieval).", demoFallback)
	p("  A question the knowledge base does not cover (\"What is the weather on Mars?\") then gets")
	p("  the static message (source: static); so does every question once an operator forces")
	p("  the retrieval tier's breaker open:")
	p(`  curl -s -X POST %s/v1/admin/breakers/trip -H 'Content-Type: application/json' -d '{"breaker":"tier/retrieval"}'`, url)
	p("  Clear the faults with: curl -s -X DELETE %s/v1/demo/faults", url)
	p("  Also: GET /v1/status, GET /v1/events, GET /metrics, POST /v1/chat/completions (OpenAI-compatible).")
	if len(faults) > 0 {
		var fs []string
		for _, f := range faults {
			fs = append(fs, f.model+"="+string(f.fault.Mode))
		}
		p("")
		p("  Started with faults: %s", strings.Join(fs, ", "))
	}
	p("")
	p("Real models: ragfuse serve --config FILE (OpenAI-compatible endpoints: DashScope, DeepSeek,")
	p("Ollama, vLLM...); see testdata/configs/providers.yaml.")
	p("")
}
