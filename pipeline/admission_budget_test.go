package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

// slowLimiter admits everything after a delay, as a shared limiter on a
// slow Redis does (up to its op timeout per call).
type slowLimiter struct{ delay time.Duration }

func (s slowLimiter) Allow(ctx context.Context, _ string, _ float64, _ int) (bool, error) {
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// TestAdmissionCountsInTheBudget: the request's budget counts from the
// call, the time admission took included, for Stream as for Ask: a slow
// shared limiter does not stretch a question past its request timeout.
func TestAdmissionCountsInTheBudget(t *testing.T) {
	for _, mode := range []string{"ask", "stream"} {
		t.Run(mode, func(t *testing.T) {
			primary := tier("primary", tiers.SourcePrimary, answers("ok"))
			p, _ := newTestPipeline(t, Options{
				RequestTimeout: 400 * time.Millisecond,
				RateLimit:      RateLimitConfig{TenantRPS: 1000},
				Limiter:        slowLimiter{delay: 200 * time.Millisecond},
				Tiers:          []Stage{{Tier: primary}, {Tier: tiers.NewStatic("static", "sorry")}},
			})
			q := tiers.Query{Tenant: "acme", Question: "q"}
			var err error
			if mode == "ask" {
				_, err = p.Ask(context.Background(), q)
			} else {
				_, err = p.Stream(context.Background(), q, func(StreamEvent) error { return nil })
			}
			if err != nil {
				t.Fatal(err)
			}
			given := primary.given()
			if len(given) != 1 {
				t.Fatalf("primary called %d times", len(given))
			}
			// 200ms of the 400ms went to admission: at most 200ms are left.
			if given[0] > 300*time.Millisecond {
				t.Fatalf("primary was given %v after 200ms of admission, out of a 400ms budget", given[0])
			}
		})
	}
}
