// Package api is the HTTP server of ragfuse: the REST surface a
// customer-service frontend calls, an OpenAI-compatible front door for
// OpenAI SDK clients, health and readiness probes, Prometheus metrics and
// structured logs.
//
// Routes:
//
//	POST   /v1/ask                   a question -> the answer, its source and a note
//	POST   /v1/ask/stream            the same as Server-Sent Events: meta, delta, note, done
//	POST   /v1/chat/completions      OpenAI-compatible, plain and stream: true (OpenAI's chunks)
//	GET    /v1/status                breakers, bulkheads, caches
//	POST   /v1/admin/reload          reload the knowledge base
//	POST   /v1/admin/breakers/trip   force a breaker open: {"breaker": "tier/retrieval"}
//	POST   /v1/admin/breakers/reset  force a breaker closed
//	GET    /healthz, /readyz         liveness, readiness
//	GET    /metrics                  Prometheus
//	GET|PUT|DELETE /v1/demo/faults[/{model}]   demo only: switch upstream faults
//
// Every error is JSON, {"error": {"code", "message", "type"}}, with an HTTP
// status chosen in one place (see errorStatus). Bad input is refused before
// the pipeline runs, so it never costs a model call. Every response carries
// an X-Request-Id header; an incoming sane X-Request-Id is kept.
//
// Wiring: create the Observer first, pass it to pipeline.Build, then pass
// both the pipeline and the Observer to New:
//
//	obs := api.NewObserver(reg, logger)
//	p, err := pipeline.Build(cfg, pipeline.BuildEnv{Observer: obs, ...})
//	srv, err := api.New(api.Config{Pipeline: p, Observer: obs, ...})
//	err = srv.ListenAndServe(ctx)
package api
