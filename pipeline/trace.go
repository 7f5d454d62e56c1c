package pipeline

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

// The attributes of the pipeline's spans (Options.Tracer).
const (
	AttrTier         = attribute.Key("ragfuse.tier")               // the stage's tier
	AttrSource       = attribute.Key("ragfuse.source")             // the tier's source
	AttrOutcome      = attribute.Key("ragfuse.outcome")            // an Attempt's outcome
	AttrModel        = attribute.Key("gen_ai.request.model")       // a model candidate's ID
	AttrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")  // prompt tokens of a model call
	AttrOutputTokens = attribute.Key("gen_ai.usage.output_tokens") // completion tokens of a model call
)

// traced is try with a span "tier/<name>" around the stage call: its
// outcome is the call's (success, a failure kind, or the reason a guard
// skipped it), and a failure its breaker counts marks the span an error.
func (qn *question) traced(ctx context.Context, s *stage, c *call) (tiers.Answer, error) {
	r := qn.run
	ctx, span := r.p.tracer.Start(ctx, "tier/"+s.name,
		trace.WithAttributes(AttrTier.String(s.name), AttrSource.String(string(s.source))))
	a, err := s.guard.call(ctx, c)
	outcome := OutcomeSuccess
	switch {
	case err == errSkipped:
		r.mu.Lock()
		outcome = r.attempts[len(r.attempts)-1].Outcome
		r.mu.Unlock()
	case err != nil:
		outcome = string(c.kind)
		if outcomeOf(c.kind) == breaker.Failure {
			span.SetStatus(codes.Error, c.why)
		}
	}
	span.SetAttributes(AttrOutcome.String(outcome))
	span.End()
	return a, err
}

// startModel starts the span "model/<id>" of a model call of tier, a
// child of the span in ctx, and returns the call's context; without a
// tracer it returns ctx and a nil span.
func (p *Pipeline) startModel(ctx context.Context, tier, id string) (context.Context, trace.Span) {
	if p.tracer == nil {
		return ctx, nil
	}
	return p.tracer.Start(ctx, "model/"+id, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrTier.String(tier), AttrModel.String(id)))
}

// endModel ends span, if not nil, with the outcome and tokens of attempt
// a; a failure its breaker counts marks it an error.
func endModel(span trace.Span, a Attempt) {
	if span == nil {
		return
	}
	span.SetAttributes(AttrOutcome.String(a.Outcome),
		AttrInputTokens.Int(a.Usage.PromptTokens), AttrOutputTokens.Int(a.Usage.CompletionTokens))
	if a.Outcome != OutcomeSuccess && outcomeOf(tiers.Kind(a.Outcome)) == breaker.Failure {
		span.SetStatus(codes.Error, a.Error)
	}
	span.End()
}

// skippedModel records a model candidate of tier skipped without a call
// (outcome says why) as a span of no length.
func (p *Pipeline) skippedModel(ctx context.Context, tier, id, outcome string) {
	if p.tracer == nil {
		return
	}
	_, span := p.tracer.Start(ctx, "model/"+id,
		trace.WithAttributes(AttrTier.String(tier), AttrModel.String(id), AttrOutcome.String(outcome)))
	span.End()
}
