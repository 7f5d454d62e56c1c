package drill

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
)

// DefaultProgressEvery is the default of Options.ProgressEvery.
const DefaultProgressEvery = 5 * time.Second

// progress writes a line about the setting being played every so often,
// and one when it ends. A nil *progress writes nothing. It is safe for
// concurrent use.
type progress struct {
	w        io.Writer
	every    time.Duration
	scenario string
	setting  string                    // "name i/n"
	total    time.Duration             // warm-up and duration, in scenario time
	speed    float64                   // scenario time per real time
	breakers func() []breaker.Snapshot // nil: not seen (over HTTP)

	mu       sync.Mutex // guards the fields below and writes to w
	start    time.Time
	asked    int
	bySource map[string]int

	stop chan struct{}
	done chan struct{}
}

// newProgress returns the progress of setting i of n of o's scenario, or
// nil when o asks for none.
func newProgress(o Options, setting string, i, n int, speed float64) *progress {
	if o.Progress == nil {
		return nil
	}
	every := o.ProgressEvery
	if every <= 0 {
		every = DefaultProgressEvery
	}
	return &progress{w: o.Progress, every: every, scenario: o.Scenario.Name,
		setting: fmt.Sprintf("%s %d/%d", setting, i+1, n), speed: speed,
		total: o.Scenario.Load.Warmup + o.Scenario.Load.Duration, bySource: map[string]int{}}
}

// begin starts the clock and the periodic lines; breakers (nil over
// HTTP) reads the breakers of the setting's pipeline.
func (p *progress) begin(start time.Time, breakers func() []breaker.Snapshot) {
	if p == nil {
		return
	}
	p.start, p.breakers = start, breakers
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case now := <-t.C:
				p.write(now, "")
			}
		}
	}()
}

// end stops the periodic lines and writes the last one.
func (p *progress) end() {
	if p == nil || p.stop == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.write(time.Now(), " done")
}

// counting returns ask, counting each question's outcome.
func (p *progress) counting(ask asker) asker {
	if p == nil {
		return ask
	}
	return func(ctx context.Context, i int) outcome {
		o := ask(ctx, i)
		p.mu.Lock()
		p.asked++
		p.bySource[o.source]++
		p.mu.Unlock()
		return o
	}
}

// write writes the line of time now, with suffix after the times.
func (p *progress) write(now time.Time, suffix string) {
	var snaps []breaker.Snapshot
	if p.breakers != nil {
		snaps = p.breakers()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := min(time.Duration(float64(now.Sub(p.start))*p.speed), p.total)
	fmt.Fprintf(p.w, "drill %s: %s %s/%s%s: %d questions (%s); breakers: %s\n", p.scenario, p.setting,
		elapsed.Round(time.Second), p.total.Round(time.Second), suffix, p.asked, sourceCounts(p.bySource), breakerStates(snaps, p.breakers != nil))
}

// sourceCounts lists the answers by source, in the chain's order.
func sourceCounts(by map[string]int) string {
	srcs := make([]string, 0, len(by))
	for s := range by {
		srcs = append(srcs, s)
	}
	slices.SortFunc(srcs, func(a, b string) int { return rank(a) - rank(b) })
	parts := make([]string, 0, len(srcs))
	for _, s := range srcs {
		parts = append(parts, fmt.Sprintf("%s %d", s, by[s]))
	}
	if len(parts) == 0 {
		return "none answered yet"
	}
	return strings.Join(parts, ", ")
}

// breakerStates lists the breakers that are not closed, with their
// state, and counts the closed ones; seen says whether the breakers are
// visible at all.
func breakerStates(snaps []breaker.Snapshot, seen bool) string {
	if !seen {
		return "not seen over HTTP"
	}
	var parts []string
	closed := 0
	for _, s := range snaps {
		if s.State == breaker.StateClosed {
			closed++
			continue
		}
		parts = append(parts, s.Name+" "+s.State.String())
	}
	slices.Sort(parts)
	switch {
	case len(snaps) == 0:
		return "none"
	case closed == len(snaps):
		return fmt.Sprintf("all %d closed", closed)
	case closed > 0:
		parts = append(parts, fmt.Sprintf("%d closed", closed))
	}
	return strings.Join(parts, ", ")
}
