package api

import (
	"context"
	"log/slog"
	"strings"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// logTransition logs breaker transition e: INFO, or WARN when it opens,
// with what tripped it. A model's breaker tripped by a refused API key
// (401/403) gets a second WARN naming the model and the variable its key
// comes from, once per trip; the key itself is never logged.
func (o *Observer) logTransition(e pipeline.Event) {
	attrs := []slog.Attr{slog.String("breaker", e.Breaker), slog.String("from", e.From.String()),
		slog.String("to", e.To.String()), slog.Time("at", e.Time)}
	level := slog.LevelInfo
	if e.To == breaker.StateOpen {
		level = slog.LevelWarn
		if t := e.Trip; !t.At.IsZero() {
			attrs = append(attrs, slog.String("cause", string(t.Cause)))
			if t.Kind != "" {
				attrs = append(attrs, slog.String("kind", t.Kind))
			}
			if t.Message != "" {
				attrs = append(attrs, slog.String("reason", t.Message))
			}
		}
	}
	ctx := context.Background()
	o.log.LogAttrs(ctx, level, "breaker state changed", attrs...)
	id, ok := strings.CutPrefix(e.Breaker, "model/")
	if !ok || e.To != breaker.StateOpen || e.Trip.Kind != string(tiers.KindAuth) {
		return
	}
	env := "(none: the model is called without a key)"
	if m := o.keyEnvs.Load(); m != nil && (*m)[id] != "" {
		env = (*m)[id]
	}
	o.log.LogAttrs(ctx, slog.LevelWarn, "model refused the API key",
		slog.String("model", id), slog.String("api_key_env", env), slog.String("reason", e.Trip.Message),
		slog.String("hint", "check the key held in api_key_env, and that the provider accepts it for this model"))
}

// setKeyEnvs tells the observer which variable holds each model's key.
func (o *Observer) setKeyEnvs(m map[string]string) {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	o.keyEnvs.Store(&c)
}

// logProbe logs probe e when it changed its breaker's state: INFO when it
// closed it, WARN when it opened it again, with the failure's kind and
// description. A probe that left the breaker half-open (its caller went
// away) is not logged.
func (o *Observer) logProbe(e pipeline.Event) {
	if e.From == e.To {
		return
	}
	a := e.Attempt
	attrs := []slog.Attr{slog.String("model", a.Model), slog.String("breaker", e.Breaker),
		slog.String("outcome", a.Outcome), slog.String("to", e.To.String()), slog.Duration("took", a.Duration)}
	level := slog.LevelInfo
	if a.Outcome != pipeline.OutcomeSuccess {
		level = slog.LevelWarn
		if a.Error != "" {
			attrs = append(attrs, slog.String("reason", a.Error))
		}
	}
	o.log.LogAttrs(context.Background(), level, "model probe", attrs...)
}
