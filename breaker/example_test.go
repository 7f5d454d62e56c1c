package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
)

// The two-step form: ask, call, report. It suits streams and calls whose
// outcome is known later.
func ExampleBreaker_Allow() {
	clk := clock.NewManual(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	b := breaker.New("model/qwen-turbo", breaker.Config{
		FailureThreshold: 2,
		OpenDuration:     30 * time.Second,
		Clock:            clk,
		OnStateChange: func(name string, from, to breaker.State) {
			fmt.Printf("%s: %v -> %v\n", name, from, to)
		},
	})
	call := func(failed bool) {
		p, err := b.Allow()
		if err != nil {
			fmt.Println("skipped:", errors.Is(err, breaker.ErrNotPermitted))
			return
		}
		if failed {
			p.Done(breaker.Failure)
		} else {
			p.Done(breaker.Success)
		}
	}
	call(true)
	call(true)
	call(false)
	clk.Advance(30 * time.Second)
	call(false) // the probe
	fmt.Println(b.State())
	// Output:
	// model/qwen-turbo: closed -> open
	// skipped: true
	// model/qwen-turbo: open -> half_open
	// model/qwen-turbo: half_open -> closed
	// closed
}

// Do calls the function and classifies its error: nil is a success, a
// cancelled context is ignored, and other errors are failures.
func ExampleBreaker_Do() {
	b := breaker.New("retrieval", breaker.Config{FailureThreshold: 1})
	unavailable := errors.New("index unavailable")

	err := b.Do(context.Background(), func(ctx context.Context) error { return unavailable })
	fmt.Println(err)
	err = b.Do(context.Background(), func(ctx context.Context) error { return nil })
	fmt.Println(err, errors.Is(err, breaker.ErrOpen))
	// Output:
	// index unavailable
	// breaker: open, call not permitted true
}

// A Classifier decides which errors are the request's own fault.
func ExampleClassify() {
	errTooLong := errors.New("context too long")
	classify := breaker.Classify(errTooLong)
	fmt.Println(classify(nil), classify(fmt.Errorf("model: %w", errTooLong)), classify(context.DeadlineExceeded))
	// Output: success ignored failure
}
