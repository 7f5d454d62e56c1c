package api

import (
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// Observer turns the pipeline's events into Prometheus metrics and
// structured logs (one line per breaker transition); the server's
// streaming routes also hand it each stream's events (Pipeline.Stream)
// for the stream metrics. Create it before the pipeline, make it the
// pipeline's observer and pass it to New as Config.Observer; New
// attaches the pipeline so gauges (breaker states, bulkheads, cache sizes)
// are read from pipeline.Status at scrape time. An Observer is safe for
// concurrent use.
type Observer struct {
	log *slog.Logger

	questions      *prometheus.CounterVec   // source
	questionTime   *prometheus.HistogramVec // source
	attempts       *prometheus.CounterVec   // tier, model, outcome
	attemptTime    *prometheus.HistogramVec // tier, model
	transitions    *prometheus.CounterVec   // breaker, from, to
	probes         *prometheus.CounterVec   // model, outcome
	bulkheadReject *prometheus.CounterVec   // tier
	rateLimited    *prometheus.CounterVec   // scope
	cacheLookups   *prometheus.CounterVec   // tier, result
	tokens         *prometheus.CounterVec   // tier, model, kind
	tokensWasted   *prometheus.CounterVec   // tier, model
	httpRequests   *prometheus.CounterVec   // route, method, code
	httpTime       *prometheus.HistogramVec // route
	streams        *prometheus.CounterVec   // source, interrupted
	firstDelta     *prometheus.HistogramVec // source
	continued      prometheus.Counter
	hedges         *prometheus.CounterVec // tier, won
	connsRefused   prometheus.Counter

	status  atomic.Pointer[statusFunc]        // set by attach; read at scrape time
	conns   atomic.Pointer[func() int64]      // set by attachConnections; read at scrape time
	keyEnvs atomic.Pointer[map[string]string] // model ID -> api_key_env; set by New
	caches  cacheTallies                      // lookups per cache tier, for /v1/status
}

type statusFunc func() pipeline.Status

var _ pipeline.Observer = (*Observer)(nil)

// latencyBuckets span cache hits (sub-millisecond) to hung models (tens
// of seconds).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60}

// NewObserver returns an Observer registering its metrics on reg (use a
// registry of your own, not the global default) and logging to logger
// (nil: slog.Default()). It registers the Go runtime and process
// collectors too (goroutines, memory, open file descriptors), unless reg
// already has them. It panics if reg already holds ragfuse metrics, as
// prometheus.MustRegister does.
func NewObserver(reg prometheus.Registerer, logger *slog.Logger) *Observer {
	if logger == nil {
		logger = slog.Default()
	}
	o := &Observer{
		log: logger,
		questions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "questions_total", Help: "Questions answered, by the source of the answer."}, []string{"source"}),
		questionTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "ragfuse",
			Name: "question_duration_seconds", Help: "End-to-end time to answer a question, by source.",
			Buckets: latencyBuckets}, []string{"source"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "attempts_total", Help: "Tier and model attempts, by outcome (success, a failure kind or a skip reason)."},
			[]string{"tier", "model", "outcome"}),
		attemptTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "ragfuse",
			Name: "attempt_duration_seconds", Help: "Time spent in a tier or model call (skips excluded).",
			Buckets: latencyBuckets}, []string{"tier", "model"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "breaker_transitions_total", Help: "Circuit breaker state changes."}, []string{"breaker", "from", "to"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "probes_total", Help: "Probe requests a prober sent to a model whose breaker was half-open, by outcome (success or a failure kind)."},
			[]string{"model", "outcome"}),
		bulkheadReject: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "bulkhead_rejected_total", Help: "Calls a bulkhead turned away."}, []string{"tier"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "rate_limited_total", Help: "Questions over a rate limit, by scope (global, tenant)."}, []string{"scope"}),
		cacheLookups: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "cache_lookups_total", Help: "Semantic cache lookups, by result (hit, miss, stale)."}, []string{"tier", "result"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "tokens_total", Help: "Model tokens spent, by kind (prompt, completion)."}, []string{"tier", "model", "kind"}),
		tokensWasted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "tokens_wasted_total", Help: "Model tokens spent on attempts that did not produce the answer."}, []string{"tier", "model"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "http_requests_total", Help: "HTTP requests, by route, method and status code."}, []string{"route", "method", "code"}),
		httpTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "ragfuse",
			Name: "http_request_duration_seconds", Help: "HTTP request duration, by route.",
			Buckets: latencyBuckets}, []string{"route"}),
		streams: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "streams_total", Help: "Streamed answers that ended (done), by source and whether they were interrupted."},
			[]string{"source", "interrupted"}),
		firstDelta: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "ragfuse",
			Name: "stream_first_delta_seconds", Help: "Time from a streamed question to its first delta, by the source that sent it.",
			Buckets: latencyBuckets}, []string{"source"}),
		continued: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "stream_continued_total", Help: "Interrupted streamed answers another model tier continued."}),
		hedges: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "hedges_total", Help: "Calls of a hedged tier joined by the next model tier, by whether the hedge won."},
			[]string{"tier", "won"}),
		connsRefused: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ragfuse",
			Name: "http_connections_refused_total", Help: "Connections closed unanswered beyond server.max_connections."}),
	}
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ragfuse",
		Name: "http_connections_open", Help: "HTTP connections open, at most server.max_connections."}, o.openConnections)
	reg.MustRegister(o.questions, o.questionTime, o.attempts, o.attemptTime, o.transitions, o.probes,
		o.bulkheadReject, o.rateLimited, o.cacheLookups, o.tokens, o.tokensWasted,
		o.httpRequests, o.httpTime, o.streams, o.firstDelta, o.continued, o.hedges, o.connsRefused, open, statusCollector{o},
		buildInfoGauge(ReadBuild()))
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			panic(err)
		}
	}
	return o
}

// Observe records e. It implements pipeline.Observer.
func (o *Observer) Observe(e pipeline.Event) {
	switch e.Kind {
	case pipeline.EventAttempt:
		a := e.Attempt
		o.attempts.WithLabelValues(a.Tier, a.Model, a.Outcome).Inc()
		if !a.Skipped() {
			o.attemptTime.WithLabelValues(a.Tier, a.Model).Observe(a.Duration.Seconds())
		}
		if a.Usage.Total() > 0 {
			o.tokens.WithLabelValues(a.Tier, a.Model, "prompt").Add(float64(a.Usage.PromptTokens))
			o.tokens.WithLabelValues(a.Tier, a.Model, "completion").Add(float64(a.Usage.CompletionTokens))
			if a.Outcome != pipeline.OutcomeSuccess {
				o.tokensWasted.WithLabelValues(a.Tier, a.Model).Add(float64(a.Usage.Total()))
			}
		}
	case pipeline.EventAnswered:
		if r := e.Result; r != nil {
			o.questions.WithLabelValues(string(r.Source)).Inc()
			o.questionTime.WithLabelValues(string(r.Source)).Observe(r.Duration.Seconds())
		}
	case pipeline.EventBreaker:
		o.transitions.WithLabelValues(e.Breaker, e.From.String(), e.To.String()).Inc()
		o.logTransition(e)
	case pipeline.EventProbe:
		o.probes.WithLabelValues(e.Attempt.Model, e.Attempt.Outcome).Inc()
		o.logProbe(e)
	case pipeline.EventRateLimited:
		o.rateLimited.WithLabelValues(e.Reason).Inc()
	case pipeline.EventBulkheadRejected:
		o.bulkheadReject.WithLabelValues(e.Tier).Inc()
	case pipeline.EventHedge:
		o.hedges.WithLabelValues(e.Tier, e.Reason).Inc()
	case pipeline.EventCache:
		o.cacheLookups.WithLabelValues(e.Tier, e.Reason).Inc()
		o.caches.add(e.Tier, e.Reason != "miss")
	}
}

// httpRequest records one HTTP request.
func (o *Observer) httpRequest(route, method, code string, d time.Duration) {
	o.httpRequests.WithLabelValues(route, method, code).Inc()
	o.httpTime.WithLabelValues(route).Observe(d.Seconds())
}

// connectionRefused counts a connection closed beyond max_connections.
func (o *Observer) connectionRefused() { o.connsRefused.Inc() }

// attachConnections makes the open-connections gauge read open.
func (o *Observer) attachConnections(open func() int64) { o.conns.Store(&open) }

func (o *Observer) openConnections() float64 {
	if f := o.conns.Load(); f != nil {
		return float64((*f)())
	}
	return 0
}

// attach makes scrape-time gauges read status.
func (o *Observer) attach(status func() pipeline.Status) {
	f := statusFunc(status)
	o.status.Store(&f)
}

// streamTally turns the events of one streamed question into the stream
// metrics. It is used by one goroutine, the request's handler.
type streamTally struct {
	o      *Observer
	start  time.Time    // when the question began
	source tiers.Source // of the last meta
	first  bool         // the first delta was seen
}

// streamTally returns a tally for a streamed question that began at start.
func (o *Observer) streamTally(start time.Time) *streamTally {
	return &streamTally{o: o, start: start}
}

// event records e, which the handler received at now: the time to the
// first delta, a continuation, and at done the stream's source and
// whether it was interrupted.
func (t *streamTally) event(e pipeline.StreamEvent, now time.Time) {
	switch e.Kind {
	case pipeline.StreamMeta:
		t.source = e.Source
		if e.Continued {
			t.o.continued.Inc()
		}
	case pipeline.StreamDelta:
		if !t.first {
			t.first = true
			t.o.firstDelta.WithLabelValues(string(t.source)).Observe(now.Sub(t.start).Seconds())
		}
	case pipeline.StreamDone:
		if r := e.Result; r != nil {
			t.o.streams.WithLabelValues(string(r.Source), strconv.FormatBool(r.Interrupted)).Inc()
		}
	}
}
