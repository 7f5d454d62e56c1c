package api

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// The standard variables that name an OTLP endpoint when the
// configuration names none.
const (
	envOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// DefaultServiceName is the service.name of ragfuse's spans.
const DefaultServiceName = "ragfuse"

// Tracing configures OpenTelemetry tracing. Zero fields take the defaults
// written beside them.
type Tracing struct {
	// OTLPEndpoint is the base URL of an OTLP/HTTP collector, e.g.
	// "http://127.0.0.1:4318": spans go to its path plus /v1/traces, as
	// with OTEL_EXPORTER_OTLP_ENDPOINT. Empty: the
	// endpoint of OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, and without either tracing is
	// off.
	OTLPEndpoint string
	// ServiceName is the service.name resource of the spans; default
	// DefaultServiceName.
	ServiceName string
	// SampleRatio is the share of the questions starting a trace that are
	// recorded, in (0, 1]; a question that continues a caller's trace
	// follows the caller's choice. Default 1: every one.
	SampleRatio float64
}

// ErrTracing is the category of a tracing configuration NewTracerProvider
// refuses.
var ErrTracing = errors.New("api: bad tracing configuration")

// NewTracerProvider returns the tracer provider of t, exporting spans in
// batches over OTLP/HTTP, or nil when tracing is off (no endpoint in t
// nor in the environment read by getenv, nil meaning none). The caller
// shuts the provider down (Shutdown flushes the last spans).
func NewTracerProvider(ctx context.Context, t Tracing, getenv func(string) string) (*sdktrace.TracerProvider, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var opts []otlptracehttp.Option
	switch {
	case t.OTLPEndpoint != "":
		u, err := url.Parse(t.OTLPEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: otlp_endpoint must be an http or https URL, e.g. http://127.0.0.1:4318", ErrTracing)
		}
		// As with OTEL_EXPORTER_OTLP_ENDPOINT, the URL is the base of the
		// signal's path.
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	case getenv(envOTLPEndpoint) == "" && getenv(envOTLPTracesEndpoint) == "":
		return nil, nil // off
	}
	ratio := t.SampleRatio
	if ratio == 0 {
		ratio = 1
	}
	if !(ratio > 0 && ratio <= 1) { // refuses NaN too
		return nil, fmt.Errorf("%w: sample_ratio must be in (0, 1]; to trace nothing, set no endpoint", ErrTracing)
	}
	name := t.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("api: tracing: %w", err)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	), nil
}

// The attributes of the question span, beside pipeline.AttrSource.
const (
	AttrTenant    = attribute.Key("ragfuse.tenant")
	AttrRequestID = attribute.Key("ragfuse.request_id")
	AttrDegraded  = attribute.Key("ragfuse.degraded")
)

// spanKey holds the question's span in the echo context.
const spanKey = "ragfuse.span"

// startQuestion starts the span "question" of q, asked through c, as a
// child of the W3C trace context the request carries (traceparent and
// tracestate headers), if any, and makes its context the request's.
// Without a tracer it does nothing.
func (s *Server) startQuestion(c echo.Context, q tiers.Query) {
	if s.tracer == nil {
		return
	}
	req := c.Request()
	ctx := propagation.TraceContext{}.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
	ctx, span := s.tracer.Start(ctx, "question", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(AttrTenant.String(q.Tenant), AttrRequestID.String(requestID(c)),
			attribute.String("http.route", c.Path())))
	c.SetRequest(req.WithContext(ctx))
	c.Set(spanKey, span)
}

// finish ends the question q asked through c at start: its span, if it
// has one, gets the answer's source (or the error), and the console's
// feed hears of it.
func (s *Server) finish(c echo.Context, q tiers.Query, start time.Time, res *pipeline.Result, err error) {
	s.remember(c, q, start, res, err)
	span, ok := c.Get(spanKey).(trace.Span)
	if !ok {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, errorStatus(err).Code)
	} else {
		span.SetAttributes(pipeline.AttrSource.String(string(res.Source)), AttrDegraded.Bool(res.Degraded))
	}
	span.End()
}
