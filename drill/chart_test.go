package drill

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func TestPNGIsValidImage(t *testing.T) {
	for _, r := range []*Report{fixedReport(), {Scenario: "empty"}} {
		var b bytes.Buffer
		if err := WritePNG(&b, r); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&b)
		if err != nil {
			t.Fatalf("%s: %v", r.Scenario, err)
		}
		panels, lanes := max(len(r.Settings), 1), 0
		for _, s := range r.Settings {
			lanes = max(lanes, len(laneNames(r, s)))
		}
		if got, want := img.Bounds().Size(), (image.Point{ChartWidth, panels * panelHeight(lanes)}); got != want {
			t.Errorf("%s: size = %v, want %v", r.Scenario, got, want)
		}
	}
}

// outlier is a report whose slowest answers sit in the plot's top corners,
// where the legend and the breaker lanes used to cover them.
func outlier() *Report {
	r := &Report{Scenario: "outlier", Duration: 60 * sec,
		Faults: []Window{{Model: "p1", Start: 10 * sec, End: 40 * sec}}}
	s := &SettingReport{Setting: "full", BySource: map[string]int{}}
	for i := range 60 {
		s.Samples = append(s.Samples, Point{At: time.Duration(i) * sec, Latency: 10 * time.Millisecond, Source: "primary"})
	}
	s.Samples = append(s.Samples,
		Point{At: sec / 2, Latency: 5 * time.Second, Source: "fallback"},
		Point{At: 59 * sec, Latency: 5 * time.Second, Source: "fallback"})
	s.Transitions = []Transition{
		{At: 12 * sec, Key: "model/p1", From: "closed", To: "open"},
		{At: 12 * sec, Key: "tier/primary", From: "closed", To: "open"},
		{At: 42 * sec, Key: "model/p1", From: "open", To: "half_open"},
	}
	r.Settings = []*SettingReport{s}
	return r
}

// drawn draws the panel of r's first setting alone and returns it with
// the image.
func drawn(t *testing.T, r *Report) (*panel, image.Image) {
	t.Helper()
	lanes := len(laneNames(r, r.Settings[0]))
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(ChartWidth), vg.Length(panelHeight(lanes))), vgimg.UseDPI(72))
	p, err := newPanel(draw.New(img), r, r.Settings[0], lanes)
	if err != nil {
		t.Fatal(err)
	}
	p.draw()
	return p, img.Image()
}

func TestChartLayout(t *testing.T) {
	p, _ := drawn(t, outlier())
	lat, lanes, legend := p.latencyD.Rectangle, p.lanesD.Rectangle, p.legendC.Rectangle
	if lanes.Max.Y > lat.Min.Y {
		t.Errorf("lanes reach up to y=%v, into the latency plot, which starts at y=%v", lanes.Max.Y, lat.Min.Y)
	}
	if legend.Min.X < lat.Max.X || legend.Min.X < lanes.Max.X {
		t.Errorf("legend starts at x=%v, inside the plots (latency to %v, lanes to %v)", legend.Min.X, lat.Max.X, lanes.Max.X)
	}
	if lat.Min.X != lanes.Min.X || lat.Max.X != lanes.Max.X {
		t.Errorf("time axes differ: latency %v..%v, lanes %v..%v", lat.Min.X, lat.Max.X, lanes.Min.X, lanes.Max.X)
	}
	if got := p.lanes.Y.Tick.Marker.Ticks(p.lanes.Y.Min, p.lanes.Y.Max); len(got) != 3 {
		t.Errorf("lane rows %v, want failing: p1, model/p1 and tier/primary", got)
	}
}

// TestChartShowsSlowestPoints guards the slowest answers against being
// drawn over by the legend or the breaker lanes.
func TestChartShowsSlowestPoints(t *testing.T) {
	r := outlier()
	p, img := drawn(t, r)
	trX, trY := p.latency.Transforms(&p.latencyD)
	height := img.Bounds().Dy()
	want := sourceColors["fallback"]
	for _, pt := range r.Settings[0].Samples {
		if pt.Source != "fallback" {
			continue
		}
		x := trX(pt.At.Seconds())
		y := trY(float64(pt.Latency) / float64(time.Millisecond))
		px, py := int(x.Points()), height-int(y.Points())
		if !shows(img, px, py, want) {
			t.Errorf("point at %v, %v drawn at (%d, %d) does not show the fallback's %v", pt.At, pt.Latency, px, py, want)
		}
	}
}

// TestChartLanes checks that each lane shows the breaker's state at the
// right time: open from 12 s, half-open from 42 s.
func TestChartLanes(t *testing.T) {
	r := outlier()
	p, img := drawn(t, r)
	trX, trY := p.lanes.Transforms(&p.lanesD)
	height := img.Bounds().Dy()
	rows := p.lanes.Y.Tick.Marker.Ticks(p.lanes.Y.Min, p.lanes.Y.Max)
	at := func(lane string, sec float64) color.RGBA {
		i := slices.IndexFunc(rows, func(tk plot.Tick) bool { return tk.Label == lane })
		if i < 0 {
			t.Fatalf("no lane %q in %v", lane, rows)
		}
		y := trY(rows[i].Value)
		if y < p.lanesD.Min.Y || y > p.lanesD.Max.Y {
			t.Fatalf("lane %q at y=%v, outside the lanes' area %v..%v", lane, y, p.lanesD.Min.Y, p.lanesD.Max.Y)
		}
		px, py := int(trX(sec).Points()), height-int(y.Points())
		return color.RGBAModel.Convert(img.At(px, py)).(color.RGBA)
	}
	for _, c := range []struct {
		lane string
		at   float64
		want color.RGBA
	}{
		{"failing: p1", 5, color.RGBA{0xff, 0xff, 0xff, 0xff}},
		{"failing: p1", 20, faultLane},
		{"model/p1", 11, stateColors["closed"]},
		{"model/p1", 13, stateColors["open"]},
		{"model/p1", 43, stateColors["half_open"]},
		{"tier/primary", 59, stateColors["open"]},
	} {
		if got := at(c.lane, c.at); got != c.want {
			t.Errorf("lane %s at %vs: %v, want %v", c.lane, c.at, got, c.want)
		}
	}
}

// shows reports whether the pixel at x, y or one next to it has colour c
// (the glyph's centre may fall between pixels).
func shows(img image.Image, x, y int, c color.RGBA) bool {
	for dx := -1; dx <= 1; dx++ {
		for dy := -1; dy <= 1; dy++ {
			if color.RGBAModel.Convert(img.At(x+dx, y+dy)).(color.RGBA) == c {
				return true
			}
		}
	}
	return false
}

func TestTimeTicks(t *testing.T) {
	tests := []struct {
		hi           float64
		step, labels float64
	}{
		{60, 10, 10},
		{120, 10, 10},
		{210, 10, 20},
		{600, 10, 60},
		{3600, 60, 300},
		{1e6, 28800, 115200},
	}
	for _, tt := range tests {
		ticks := timeTicks{}.Ticks(0, tt.hi)
		for i, tk := range ticks {
			if tk.Value != float64(i)*tt.step {
				t.Fatalf("span %v: tick %d at %v, want every %v s", tt.hi, i, tk.Value, tt.step)
			}
			if labelled := int(tk.Value)%int(tt.labels) == 0; labelled != (tk.Label != "") {
				t.Fatalf("span %v: tick at %v labelled %q, want labels every %v s", tt.hi, tk.Value, tk.Label, tt.labels)
			}
		}
		if last := ticks[len(ticks)-1].Value; last+tt.step <= tt.hi {
			t.Fatalf("span %v: ticks end at %v", tt.hi, last)
		}
	}
}
