package drill

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/ragfuse/ragfuse/breaker"
)

// Chart geometry, in pixels (the chart is drawn at 72 dpi, a point per
// pixel): ChartWidth wide; per setting, a latency plot ChartPlotHeight high
// and below it ChartLaneHeight per lane plus ChartAxisHeight for the time
// axis. Every panel has room for the largest number of lanes of any setting.
const (
	ChartWidth      = 1200
	ChartPlotHeight = 360
	ChartLaneHeight = 22
	ChartAxisHeight = 56
)

// legendWidth is the column right of the plots that holds the legend.
const legendWidth = 220

// Font sizes, in points: readable at 100% zoom.
const (
	titleSize = 16
	labelSize = 14
	tickSize  = 13
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
	faultLane  = color.RGBA{0xf4, 0xa6, 0xa6, 0xff}
	gridColor  = color.Gray{0xdd}
)

// WritePNG draws r as a PNG chart, one panel per setting stacked top to
// bottom. A panel is a latency plot over scenario time coloured by source
// (logarithmic, the failing windows shaded) and, below it on the same time
// axis, a lane per failing model and per breaker showing its state over
// time; the legend stands in a column of its own, right of the plots. The
// time axis has a tick every 10 s.
func WritePNG(w io.Writer, r *Report) error {
	n := max(len(r.Settings), 1)
	lanes := 0
	for _, s := range r.Settings {
		lanes = max(lanes, len(laneNames(r, s)))
	}
	h := panelHeight(lanes)
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(ChartWidth), vg.Length(h*n)), vgimg.UseDPI(72))
	dc := draw.New(img)
	for i := range n {
		var s *SettingReport
		if i < len(r.Settings) {
			s = r.Settings[i]
		}
		top := dc.Max.Y - vg.Length(h*i)
		c := draw.Crop(dc, 0, 0, top-vg.Length(h)-dc.Min.Y, top-dc.Max.Y)
		p, err := newPanel(c, r, s, lanes)
		if err != nil {
			return err
		}
		p.draw()
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// panelHeight is the height of a panel with room for lanes lanes.
func panelHeight(lanes int) int {
	return ChartPlotHeight + ChartLaneHeight*max(lanes, 1) + ChartAxisHeight
}

// panel is one setting's latency plot, lanes and legend, each with the
// canvas it is drawn on; the plots' data areas share their horizontal
// extent, so a time is at the same x in both.
type panel struct {
	latency, lanes     *plot.Plot
	legend             plot.Legend
	latencyC, lanesC   draw.Canvas
	legendC            draw.Canvas
	latencyD, lanesD   draw.Canvas // the data areas
	lanesMax, lanesLen int
}

// newPanel lays out the panel of setting s (nil: an empty panel) on c, with
// room for lanes lanes.
func newPanel(c draw.Canvas, r *Report, s *SettingReport, lanes int) (*panel, error) {
	lat, leg, err := latencyPlot(r, s)
	if err != nil {
		return nil, err
	}
	ln := lanePlot(r, s, lanes)
	const pad = 8
	plots := draw.Crop(c, pad, -legendWidth, pad, -pad)
	split := plots.Max.Y - ChartPlotHeight
	p := &panel{latency: lat, lanes: ln, legend: leg,
		latencyC: draw.Crop(plots, 0, 0, split-plots.Min.Y, 0),
		lanesC:   draw.Crop(plots, 0, 0, 0, split-plots.Max.Y),
		legendC:  draw.Crop(c, c.Size().X-legendWidth+pad, -pad, pad, -pad-vg.Length(titleSize)-8),
	}
	// Align the data areas: the plot whose y axis is narrower moves right.
	p.latencyD, p.lanesD = lat.DataCanvas(p.latencyC), ln.DataCanvas(p.lanesC)
	if d := p.lanesD.Min.X - p.latencyD.Min.X; d > 0 {
		p.latencyC = draw.Crop(p.latencyC, d, 0, 0, 0)
	} else if d < 0 {
		p.lanesC = draw.Crop(p.lanesC, -d, 0, 0, 0)
	}
	p.latencyD, p.lanesD = lat.DataCanvas(p.latencyC), ln.DataCanvas(p.lanesC)
	return p, nil
}

func (p *panel) draw() {
	p.latency.Draw(p.latencyC)
	p.lanes.Draw(p.lanesC)
	p.legend.Draw(p.legendC)
}

// latencyPlot returns the latency plot of s and its legend.
func latencyPlot(r *Report, s *SettingReport) (*plot.Plot, plot.Legend, error) {
	p := plot.New()
	styleAxes(p)
	leg := plot.NewLegend()
	leg.TextStyle.Font.Size = tickSize
	leg.Top, leg.Left = true, true
	leg.ThumbnailWidth = vg.Points(18)
	p.Y.Label.Text = "latency (ms, log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max = 0, max(r.Duration.Seconds(), 1)
	p.Y.Min, p.Y.Max = minLatencyMs, 10
	if s == nil {
		p.Title.Text = r.Scenario + ": no setting ran"
		return p, leg, nil
	}
	p.Title.Text = fmt.Sprintf("%s: %s — availability %s, p99 %s", r.Scenario, s.Setting, percent(s.Availability), ms(s.Latency.P99))
	if !s.OverHTTP {
		p.Title.Text += fmt.Sprintf(", %d calls to failing models", s.FailingCalls)
	}
	p.Add(shade{windows: r.Faults}, grid())
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
			return nil, leg, fmt.Errorf("drill: chart: %w", err)
		}
		sc.GlyphStyle.Color = colorOf(sourceColors, src)
		sc.GlyphStyle.Radius = vg.Points(1.8)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
		leg.Add(fmt.Sprintf("%s (%d)", src, len(bySource[src])), bigGlyph(colorOf(sourceColors, src)))
	}
	for _, st := range []breaker.State{breaker.StateClosed, breaker.StateHalfOpen, breaker.StateOpen} {
		leg.Add("breaker "+st.String(), swatch(colorOf(stateColors, st.String())))
	}
	leg.Add("model failing", swatch(faultLane))
	return p, leg, nil
}

// lanePlot returns the lanes of s (a failing model's windows, then each
// breaker's states) on the time axis, with room for lanes lanes.
func lanePlot(r *Report, s *SettingReport, lanes int) *plot.Plot {
	p := plot.New()
	styleAxes(p)
	p.X.Label.Text = "scenario time (s)"
	p.X.Min, p.X.Max = 0, max(r.Duration.Seconds(), 1)
	names := laneNames(r, s)
	// NominalY puts the first name at the bottom: list them bottom up,
	// blank rows first, so that lanes fill the panel from the top.
	rows := make([]string, max(lanes, 1))
	for i, name := range names {
		rows[len(rows)-1-i] = name
	}
	p.NominalY(rows...)
	p.Y.Min, p.Y.Max = -0.5, float64(len(rows))-0.5
	p.Y.Tick.Label.Font.Size = tickSize
	p.Y.Tick.Length = 0
	p.Y.Padding = 0
	p.Add(grid(), laneSpans{rows: rows, spans: laneSpansOf(r, s)})
	return p
}

// styleAxes sets the fonts and the 10 s time ticks of p.
func styleAxes(p *plot.Plot) {
	p.Title.TextStyle.Font.Size = titleSize
	p.X.Label.TextStyle.Font.Size = labelSize
	p.Y.Label.TextStyle.Font.Size = labelSize
	p.X.Tick.Label.Font.Size = tickSize
	p.Y.Tick.Label.Font.Size = tickSize
	p.X.Tick.Marker = timeTicks{}
}

// grid draws vertical lines at the labelled time ticks.
func grid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Horizontal.Color = nil
	g.Vertical.Color = gridColor
	return g
}

// timeTicks marks every 10 s of scenario time, labelled every 10 s on a
// span of up to two minutes and at a wider multiple of 10 s beyond; on a
// span of over ten minutes the marks too are a wider multiple of 10 s.
type timeTicks struct{}

// niceSteps are the steps, in seconds, timeTicks chooses from.
var niceSteps = []float64{10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600}

// Ticks implements plot.Ticker.
func (timeTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	step := niceStep(span, 60, 10)
	label := niceStep(span, 12, step)
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		t := plot.Tick{Value: v}
		if math.Mod(v, label) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
		ts = append(ts, t)
	}
	return ts
}

// niceStep returns the first of niceSteps, at least least, that cuts span
// into at most n steps (beyond the list, the last doubled until it does).
func niceStep(span float64, n int, least float64) float64 {
	var step float64
	for _, step = range niceSteps {
		if step >= least && span/step <= float64(n) {
			return step
		}
	}
	for span/step > float64(n) || step < least {
		step *= 2
	}
	return step
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
		c.FillPolygon(faultShade, c.ClipPolygonX(rect(x0, c.Min.Y, x1, c.Max.Y)))
	}
}

func rect(x0, y0, x1, y1 vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}

// swatch is a legend thumbnail filled with one colour.
type swatch color.RGBA

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(color.RGBA(s), rect(c.Min.X, c.Min.Y+2, c.Max.X, c.Max.Y-2))
}

// bigGlyph is a legend thumbnail: a dot of a source's colour, larger than
// the plot's so that its colour reads.
type bigGlyph color.RGBA

func (g bigGlyph) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle{Color: color.RGBA(g), Radius: vg.Points(4), Shape: draw.CircleGlyph{}}, c.Center())
}
