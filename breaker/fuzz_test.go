package breaker_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/clock"
)

// FuzzBreaker runs random sequences of calls, reports, clock steps, trips
// and resets against a breaker and against a plain single-threaded model of
// the documented rules, and checks that both agree at every step.
func FuzzBreaker(f *testing.F) {
	f.Add(uint32(0), []byte{0, 1, 1, 0, 1, 1, 0, 1, 1, 4, 2, 10, 0, 1, 0, 4})
	f.Add(uint32(0x12345), []byte{0, 0, 0, 1, 1, 1, 1, 2, 1, 2, 20, 0, 0, 3, 0, 9, 3, 1, 0, 4})
	f.Add(uint32(0xfedcba), []byte{0, 1, 1, 0, 1, 1, 2, 10, 0, 0, 0, 2, 30, 0, 1, 0, 4, 5, 4, 6, 4})
	f.Add(uint32(0x0f0f0f), []byte{0, 3, 0, 200, 0, 3, 1, 0, 2, 5, 0, 1, 1, 0, 1, 1, 2, 50, 0, 4, 2, 1, 4})
	f.Add(uint32(0x777777), []byte{0, 0, 1, 1, 1, 1, 2, 3, 0, 1, 1, 2, 100, 0, 0, 0, 1, 0, 0, 1, 1, 0, 4})
	f.Add(uint32(0xa5a5a5), []byte{0, 1, 1, 0, 1, 1, 0, 1, 1, 2, 15, 0, 0, 0, 1, 0, 1, 1, 0, 2, 40, 4, 0, 1, 0, 4})
	// Calls in flight past the slow-call threshold, reported late.
	f.Add(uint32(0x10000), []byte{0, 0, 0, 2, 4, 4, 0, 4})
	f.Add(uint32(0x100fc), []byte{0, 0, 0, 0, 2, 3, 4, 1, 0, 1, 3, 1, 0, 0, 4, 0, 0, 0, 0, 2, 1, 4, 3, 2, 2, 0, 4})
	f.Fuzz(func(t *testing.T, knobs uint32, ops []byte) {
		clk := clock.NewManual(t0)
		b := breaker.New("fuzz", fuzzConfig(knobs, clk))
		m := newModel(b.Config(), clk.Now())
		type held struct {
			p  *breaker.Permit
			mp modelPermit
		}
		var permits []held
		arg := func(i int) byte {
			if i < len(ops) {
				return ops[i]
			}
			return 0
		}
		for i := 0; i < len(ops); i++ {
			switch op := ops[i] % 7; op {
			case 0: // Allow
				p, err := b.Allow()
				mp, merr := m.allow(clk.Now())
				if !errors.Is(err, merr) || (err == nil) != (merr == nil) {
					t.Fatalf("op %d Allow: %v, model %v", i, err, merr)
				}
				if err == nil {
					if p.Probe() != mp.probe {
						t.Fatalf("op %d Allow: probe %v, model %v", i, p.Probe(), mp.probe)
					}
					permits = append(permits, held{&p, mp})
				}
			case 1, 3: // Done or Report on a held permit
				if len(permits) == 0 {
					continue
				}
				k := int(arg(i+1)) % len(permits)
				o := breaker.Outcome(arg(i+2) % 3)
				i += 2
				h := &permits[k]
				why := breaker.Reason{Kind: fmt.Sprint("op ", i), Message: o.String()}
				if op == 1 {
					h.p.DoneReason(o, why)
					m.report(&h.mp, o, clk.Now().Sub(h.mp.start), clk.Now(), why)
				} else {
					elapsed := time.Duration(arg(i+1)) * 10 * time.Millisecond
					i++
					h.p.ReportReason(o, elapsed, why)
					m.report(&h.mp, o, elapsed, clk.Now(), why)
				}
			case 2: // clock step
				clk.Advance(time.Duration(arg(i+1)) * 50 * time.Millisecond)
				i++
			case 4:
				m.check(t, fmt.Sprintf("op %d", i), b.Snapshot(), clk.Now())
			case 5:
				b.Trip()
				m.trip(clk.Now())
			case 6:
				b.Reset()
				m.reset()
			}
		}
		m.check(t, "end", b.Snapshot(), clk.Now())
	})
}

// fuzzConfig turns 32 bits into a small configuration.
func fuzzConfig(k uint32, clk clock.Clock) breaker.Config {
	pick := func(bits uint32, n int) int { return int(bits) % n }
	c := breaker.Config{
		Clock:            clk,
		FailureThreshold: []int{-1, 1, 2, 3}[pick(k&3, 4)],
		Window:           1 + pick(k>>2&7, 8),
		MinimumCalls:     1 + pick(k>>5&7, 8),
		FailureRate:      []float64{-1, 0.25, 0.5, 1}[pick(k>>8&3, 4)],
		OpenDuration:     time.Second,
		OpenBackoff:      []float64{1, 2}[pick(k>>10&1, 2)],
		MaxOpenDuration:  3 * time.Second,
		HalfOpenMaxCalls: 1 + pick(k>>11&3, 3),
		SuccessThreshold: 1 + pick(k>>13&3, 3),
		ProbeTimeout:     []time.Duration{time.Second, 2 * time.Second}[pick(k>>15&1, 2)],
	}
	if k>>16&1 == 1 {
		c.SlowCallDuration = 100 * time.Millisecond
		c.SlowCallRate = []float64{0.5, 1}[pick(k>>17&1, 2)]
	}
	if k>>18&1 == 1 {
		c.WindowDuration = time.Duration(1+pick(k>>19&3, 4)) * time.Second
		c.WindowBuckets = 1 + pick(k>>21&7, 8)
	}
	return c
}
