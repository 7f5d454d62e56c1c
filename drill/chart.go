package drill

import (
	"fmt"
	"image/color"
	"io"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/ragfuse/ragfuse/breaker"
)

// Chart size, in pixels: ChartWidth wide, ChartPanelHeight per setting.
const (
	ChartWidth       = 1200
	ChartPanelHeight = 440
)

// minLatencyMs keeps latencies off zero on the logarithmic axis.
const minLatencyMs = 0.05

var (
	sourceColors = map[string]color.RGBA{
		"cache":       {0x1f, 0x77, 0xb4, 0xff},
		"primary":     {0x2c, 0xa0, 0x2c, 0xff},
		"fallback":    {0xff, 0x7f, 0x0e, 0xff},
		"stale_cache": {0x17, 0xbe, 0xcf, 0xff},
		"retrieval":   {0x94, 0x67, 0xbd, 0xff},
		"static":      {0x7f, 0x7f, 0x7f, 0xff},
		sourceError:   {0xd6, 0x27, 0x28, 0xff},
	}
	stateColors = map[string]color.RGBA{
		breaker.StateClosed.String():   {0xc7, 0xe9, 0xc0, 0xff},
		breaker.StateHalfOpen.String(): {0xfd, 0xd0, 0xa2, 0xff},
		breaker.StateOpen.String():     {0xe3, 0x4a, 0x33, 0xff},
	}
	faultShade = color.NRGBA{0xff, 0x40, 0x40, 0x30}
)

// WritePNG draws r as a PNG chart, one panel per setting stacked top to
// bottom: latency over time coloured by source (logarithmic), the failing
// windows shaded, and a band per breaker showing its state over time. The
// image is ChartWidth by ChartPanelHeight times the number of settings
// pixels.
func WritePNG(w io.Writer, r *Report) error {
	n := max(len(r.Settings), 1)
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(ChartWidth), vg.Length(ChartPanelHeight*n)), vgimg.UseDPI(72))
	dc := draw.New(img)
	plots := make([][]*plot.Plot, n)
	for i := range n {
		var s *SettingReport
		if i < len(r.Settings) {
			s = r.Settings[i]
		}
		p, err := panel(r, s)
		if err != nil {
			return err
		}
		plots[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: n, Cols: 1, PadX: 4, PadY: 12, PadTop: 6, PadBottom: 6, PadLeft: 6, PadRight: 12}
	canvases := plot.Align(plots, tiles, dc)
	for i := range n {
		plots[i][0].Draw(canvases[i][0])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// panel builds the plot of one setting (s may be nil: an empty panel).
func panel(r *Report, s *SettingReport) (*plot.Plot, error) {
	p := plot.New()
	p.X.Label.Text = "scenario time (s)"
	p.Y.Label.Text = "latency (ms, log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max = 0, max(r.Duration.Seconds(), 1)
	p.Y.Min, p.Y.Max = minLatencyMs, 10
	p.Legend.Top = true
	p.Legend.Left = false
	p.Legend.Padding = 2
	if s == nil {
		p.Title.Text = r.Scenario + ": no setting ran"
		return p, nil
	}
	p.Title.Text = fmt.Sprintf("%s: %s — availability %s, p99 %s", r.Scenario, s.Setting, percent(s.Availability), ms(s.Latency.P99))
	if !s.OverHTTP {
		p.Title.Text += fmt.Sprintf(", %d calls to failing models", s.FailingCalls)
	}
	p.Add(shade{windows: r.Faults})
	bySource := map[string]plotter.XYs{}
	for _, pt := range s.Samples {
		y := max(float64(pt.Latency)/float64(time.Millisecond), minLatencyMs)
		bySource[pt.Source] = append(bySource[pt.Source], plotter.XY{X: pt.At.Seconds(), Y: y})
		p.Y.Max = max(p.Y.Max, y*1.5)
	}
	srcs := make([]string, 0, len(bySource))
	for src := range bySource {
		srcs = append(srcs, src)
	}
	slices.SortFunc(srcs, func(a, b string) int { return rank(a) - rank(b) })
	for _, src := range srcs {
		sc, err := plotter.NewScatter(bySource[src])
		if err != nil {
			return nil, fmt.Errorf("drill: chart: %w", err)
		}
		sc.GlyphStyle.Color = colorOf(sourceColors, src)
		sc.GlyphStyle.Radius = vg.Points(1.6)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("%s (%d)", src, len(bySource[src])), sc)
	}
	b := newBands(s.Transitions, r.Duration)
	p.Add(b)
	for _, st := range []breaker.State{breaker.StateClosed, breaker.StateHalfOpen, breaker.StateOpen} {
		p.Legend.Add("breaker "+st.String(), swatch(colorOf(stateColors, st.String())))
	}
	p.Legend.Add("model failing", swatch(color.RGBA{0xff, 0xd9, 0xd9, 0xff}))
	// Keep the legend below the breaker bands.
	p.Legend.YOffs = -vg.Length(len(b.keys))*(bandHeight+2) - 4
	return p, nil
}

func rank(src string) int {
	if i := slices.Index(sourceOrder, src); i >= 0 {
		return i
	}
	return len(sourceOrder)
}

func colorOf(m map[string]color.RGBA, k string) color.RGBA {
	if c, ok := m[k]; ok {
		return c
	}
	return color.RGBA{0, 0, 0, 0xff}
}

// shade fills the failing windows across the whole height of the plot.
type shade struct{ windows []Window }

func (s shade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, w := range s.windows {
		x0, x1 := trX(w.Start.Seconds()), trX(w.End.Seconds())
		c.FillPolygon(faultShade, c.ClipPolygonX([]vg.Point{
			{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}))
	}
}

// span is a breaker state over [from, to) of scenario time.
type span struct {
	from, to time.Duration
	state    string
}

// bands draws one strip per breaker at the top of the plot, coloured by
// the breaker's state over time, labelled with the breaker's name.
type bands struct {
	keys  []string
	spans map[string][]span
}

func newBands(ts []Transition, end time.Duration) bands {
	b := bands{spans: map[string][]span{}}
	last := map[string]Transition{}
	for _, t := range ts {
		prev, ok := last[t.Key]
		if !ok {
			b.keys = append(b.keys, t.Key)
			prev = Transition{At: 0, To: t.From}
		}
		b.spans[t.Key] = append(b.spans[t.Key], span{from: prev.At, to: t.At, state: prev.To})
		last[t.Key] = t
	}
	for k, t := range last {
		b.spans[k] = append(b.spans[k], span{from: t.At, to: end, state: t.To})
	}
	slices.Sort(b.keys)
	return b
}

const bandHeight = vg.Length(11)

func (b bands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	label := draw.TextStyle{Color: color.Black, Font: p.X.Tick.Label.Font, Handler: p.X.Tick.Label.Handler,
		XAlign: draw.XLeft, YAlign: draw.YCenter}
	label.Font.Size = 8
	for i, k := range b.keys {
		top := c.Max.Y - vg.Length(i)*(bandHeight+2)
		bottom := top - bandHeight
		for _, s := range b.spans[k] {
			x0, x1 := trX(s.from.Seconds()), trX(s.to.Seconds())
			if x1 <= x0 {
				continue
			}
			c.FillPolygon(colorOf(stateColors, s.state), c.ClipPolygonX([]vg.Point{
				{X: x0, Y: bottom}, {X: x1, Y: bottom}, {X: x1, Y: top}, {X: x0, Y: top}}))
		}
		c.FillText(label, vg.Point{X: c.Min.X + 3, Y: (top + bottom) / 2}, k)
	}
}

// swatch is a legend thumbnail filled with one colour.
type swatch color.RGBA

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(color.RGBA(s), []vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}
