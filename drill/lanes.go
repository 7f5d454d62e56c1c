package drill

import (
	"image/color"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

// faultPrefix starts the name of a failing model's lane.
const faultPrefix = "failing: "

// span is a coloured stretch [from, to) of scenario time in one lane.
type span struct {
	from, to time.Duration
	color    color.RGBA
}

// laneNames returns the lanes of setting s (nil: none ran), top first: one
// per model with a failing window, then one per breaker that changed
// state, sorted.
func laneNames(r *Report, s *SettingReport) []string {
	var names []string
	for _, w := range r.Faults {
		if n := faultPrefix + w.Model; !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if s == nil {
		return names
	}
	var keys []string
	for _, t := range s.Transitions {
		if !slices.Contains(keys, t.Key) {
			keys = append(keys, t.Key)
		}
	}
	slices.Sort(keys)
	return append(names, keys...)
}

// laneSpansOf returns the spans of each lane of s: a failing model's
// windows, and each breaker's state from 0 to the end of the scenario.
func laneSpansOf(r *Report, s *SettingReport) map[string][]span {
	out := map[string][]span{}
	for _, w := range r.Faults {
		out[faultPrefix+w.Model] = append(out[faultPrefix+w.Model], span{from: w.Start, to: w.End, color: faultLane})
	}
	if s == nil {
		return out
	}
	last := map[string]Transition{}
	for _, t := range s.Transitions {
		prev, ok := last[t.Key]
		if !ok {
			prev = Transition{At: 0, To: t.From}
		}
		out[t.Key] = append(out[t.Key], span{from: prev.At, to: t.At, color: colorOf(stateColors, prev.To)})
		last[t.Key] = t
	}
	for k, t := range last {
		out[k] = append(out[k], span{from: t.At, to: r.Duration, color: colorOf(stateColors, t.To)})
	}
	return out
}

// laneSpans draws the spans of each lane; rows are the lane names from
// the bottom row up, as given to NominalY ("" for an empty row).
type laneSpans struct {
	rows  []string
	spans map[string][]span
}

// Plot implements plot.Plotter.
func (l laneSpans) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, name := range l.rows {
		if name == "" {
			continue
		}
		bottom, top := trY(float64(i)-0.36), trY(float64(i)+0.36)
		for _, s := range l.spans[name] {
			x0, x1 := trX(s.from.Seconds()), trX(s.to.Seconds())
			if x1 <= x0 {
				continue
			}
			c.FillPolygon(s.color, c.ClipPolygonX(rect(x0, bottom, x1, top)))
		}
	}
}
