package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
)

var errBadRequest = errors.New("bad request")

func TestClassify(t *testing.T) {
	c := breaker.Classify(errBadRequest, nil)
	tests := []struct {
		err  error
		want breaker.Outcome
	}{
		{nil, breaker.Success},
		{context.Canceled, breaker.Ignored},
		{fmt.Errorf("call: %w", context.Canceled), breaker.Ignored},
		{context.DeadlineExceeded, breaker.Failure},
		{fmt.Errorf("wrapped: %w", errBadRequest), breaker.Ignored},
		{errors.New("boom"), breaker.Failure},
	}
	for _, tt := range tests {
		if got := c(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestDo(t *testing.T) {
	h := newHarness(t, breaker.Config{FailureThreshold: 2})
	ctx := context.Background()
	boom := errors.New("boom")

	if err := h.b.Do(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := h.b.Do(ctx, func(context.Context) error { return context.Canceled }); err != context.Canceled {
		t.Fatalf("Do returned %v, want fn's error unchanged", err)
	}
	if err := h.b.DoWith(ctx, breaker.Classify(errBadRequest), func(context.Context) error { return errBadRequest }); err != errBadRequest {
		t.Fatal(err)
	}
	counts(1, 0, 0, 0)(h)
	if err := h.b.DoWith(ctx, nil, func(context.Context) error { return boom }); err != boom {
		t.Fatal(err)
	}
	counts(2, 1, 0, 1)(h)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	called := false
	if err := h.b.Do(cctx, func(context.Context) error { called = true; return nil }); err != context.Canceled || called {
		t.Fatalf("Do on a done context: err %v, called %v", err, called)
	}

	_ = h.b.Do(ctx, func(context.Context) error { return boom })
	want(open)(h)
	called = false
	err := h.b.Do(ctx, func(context.Context) error { called = true; return nil })
	if !errors.Is(err, breaker.ErrOpen) || called {
		t.Fatalf("Do while open: err %v, called %v", err, called)
	}
}

func TestDoPanicCountsAsFailure(t *testing.T) {
	h := newHarness(t, breaker.Config{FailureThreshold: 1, OpenDuration: time.Second})
	defer func() {
		if r := recover(); r != "fn" {
			t.Fatalf("recovered %v, want the panic to continue", r)
		}
		want(open)(h)
	}()
	_ = h.b.Do(context.Background(), func(context.Context) error { panic("fn") })
}

func TestDoPassesContext(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, 7)
	b := breaker.New("ctx", breaker.Config{})
	var got any
	_ = b.Do(ctx, func(ctx context.Context) error { got = ctx.Value(key{}); return nil })
	if got != 7 {
		t.Fatalf("fn saw %v", got)
	}
}
