// Package llmtest provides a fault-injecting OpenAI-compatible server for
// tests, drills and demos, in the spirit of net/http/httptest.
//
// A Server answers chat completions (plain and streamed as Server-Sent
// Events) and embeddings with deterministic content: the answer names the
// model ("[qwen3-max] …"), mentions the first document found after a
// "Documents:" line of the prompt, and echoes the question; embeddings are
// unit vectors made by feature hashing of the words. Token usage and
// per-model counters (Stats) are kept.
//
// Each model can be given a Fault at run time (SetFault) or a schedule of
// faults over time (Schedule, evaluated against Config.Clock on each
// request, with no goroutine): added latency, a hang, an HTTP status with
// a body, 429 with Retry-After, a connection reset, a stream broken or
// stalled after N chunks, malformed JSON, or empty choices. AnyModel sets
// a fault for every model without one of its own. HoldBreaks lets a test
// choose the moment a broken answer breaks: the chunks before the break
// are sent, and the connection is cut only when the test releases it.
//
// Two ways to run it:
//
//	srv := llmtest.NewServer(llmtest.Config{}) // listening on 127.0.0.1
//	defer srv.Close()
//	cfg := openai.DefaultConfig("")
//	cfg.BaseURL = srv.URL // "http://127.0.0.1:PORT/v1"
//
//	srv := llmtest.New(llmtest.Config{}) // mount it yourself
//	mux.Handle("/", srv)                 // or http.StripPrefix under a prefix
//	defer srv.Close()                    // releases hung handlers
//
// Paths are /v1/chat/completions, /v1/embeddings, /v1/models, and the
// JSON control API under /_llmtest/ (faults, schedule, stats), which tools
// such as `ragfuse chaos` use to switch faults on a running server.
//
// Every handler returns as soon as its client goes away or Close is
// called, so hang and stall faults leave no goroutine behind. Close on a
// mounted Server releases its handlers but does not stop the enclosing
// http.Server; call it before that server's Shutdown, which would
// otherwise wait for hung handlers.
//
// # Measuring
//
//	go test -run '^$' -bench . -benchmem ./tiers/llmtest/
//
// times a plain chat completion, a streamed one and an embedding through
// the handler: the server's share of the pipeline's upstream benchmarks.
package llmtest
