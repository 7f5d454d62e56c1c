// Package api is the HTTP server of ragfuse: the REST surface a
// customer-service frontend calls, an OpenAI-compatible front door for
// OpenAI SDK clients, a web console for operators, health and readiness
// probes, Prometheus metrics, structured logs and OpenTelemetry tracing.
//
// Routes:
//
//	POST   /v1/ask                   a question -> the answer, its source and a note
//	POST   /v1/ask/stream            the same as Server-Sent Events: meta, delta, note, done
//	POST   /v1/chat/completions      OpenAI-compatible, plain and stream: true (OpenAI's chunks)
//	GET    /v1/models[/{id}]         the model id an OpenAI client may send ("ragfuse")
//	GET    /v1/status                all for an admin (with each breaker's last trip reason); a tenant's own view otherwise
//	GET    /v1/events                admin: the console's live feed (SSE): history, status each second, questions
//	POST   /v1/admin/reload          reload the knowledge base (on every instance of a cluster)
//	POST   /v1/admin/breakers/trip   force a breaker open: {"breaker": "tier/retrieval"}
//	POST   /v1/admin/breakers/reset  force a breaker closed; {"breaker": "*"}: every one
//	GET    /console, GET /           the web console (/ redirects there); embedded files
//	GET|HEAD /healthz, /readyz       liveness, readiness
//	GET    /metrics                  Prometheus
//	GET|PUT|DELETE /v1/demo/faults[/{model}]   demo only: switch upstream faults
//
// A question may carry its conversation: "history" on /v1/ask and
// /v1/ask/stream, the earlier user and assistant messages on
// /v1/chat/completions (system messages ignored, other roles refused).
// The newest ServerOptions.MaxHistoryTurns turns are kept, and more than
// MaxHistoryBytes of them is 413 history_too_long; a turn of another role
// or without readable content is 400 invalid_history. Notes are in the
// Accept-Language's language, else the question's (Han: zh, other
// letters: en), else ServerOptions.DefaultLanguage.
//
// The console (console/, embedded) is plain HTML, CSS and JavaScript that
// fetch nothing from elsewhere; it reads /v1/events with the key the
// operator types, sent as a bearer token, as are its admin actions.
//
// With Config.Tracer set, each question is a span "question" (tenant,
// request id, source, degraded) continuing the request's W3C traceparent;
// the pipeline's spans are its children. NewTracerProvider makes a tracer
// provider exporting over OTLP/HTTP. A breaker that opens is logged with
// its trip reason, and a model breaker tripped by refused keys (401/403)
// with a warning naming the model and its api_key_env.
//
// Every error is JSON, {"error": {"code", "message", "type"}}, with an HTTP
// status chosen in one place (see errorStatus). Bad input is refused before
// the pipeline runs, so it never costs a model call. Every response carries
// an X-Request-Id header; an incoming sane X-Request-Id is kept.
//
// Tenant keys (Config.Keys) ask questions and see their own status; admin
// keys (Config.AdminKeys) use the admin routes and the full status, and
// admin actions are logged under the key's name. With no keys at all, the
// admin routes answer only unforwarded loopback clients. A request must
// arrive within ReadTimeout (else 408, connection closed), at most
// MaxConnections are open at once, and from the stop signal every response
// closes its connection. Text a client sends goes through cleanText.
//
// The server takes a built *pipeline.Pipeline and its own options:
// ServerOptions (address, limits, shutdown), the API keys already
// resolved to tenants, and Notes. It reads no configuration file and no
// environment; cmd/ragfuse maps package config onto these options.
// Wiring: create the Observer first, make it the pipeline's observer
// (config.Env.Observer or pipeline.Options.Observer), then pass both the
// pipeline and the Observer to New:
//
//	obs := api.NewObserver(reg, logger)
//	p, err := config.Build(cfg, config.Env{Observer: obs, ...})
//	srv, err := api.New(api.Config{Pipeline: p, Observer: obs, Keys: keys, ...})
//	err = srv.ListenAndServe(ctx)
package api
