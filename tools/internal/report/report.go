// Package report draws the figure of a training run: loss and test accuracy
// per epoch, and the loss scale over steps on a log axis with the skipped
// steps marked; with a second run (fp32) beside the first for comparison.
package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Run is the history of one training run.
type Run struct {
	Name     string    `json:"name"` // as shown in legends, e.g. "fp16 AMP"
	Loss     []float64 `json:"loss"`
	Accuracy []float64 `json:"accuracy"`
	// ScaleSteps and Scale sample the loss scale at some steps.
	ScaleSteps []int     `json:"scale_steps,omitempty"`
	Scale      []float64 `json:"scale,omitempty"`
	Skipped    []int     `json:"skipped,omitempty"` // steps skipped for an inf
}

var colors = []color.Color{color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 255}}

// Write draws the runs into a PNG at path, atomically.
func Write(path string, runs ...Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("report: nothing to draw")
	}
	loss := perEpoch("Training loss", "loss", runs, func(r Run) []float64 { return r.Loss })
	acc := perEpoch("Test accuracy", "accuracy", runs, func(r Run) []float64 { return r.Accuracy })
	scale, err := scalePlot(runs[0])
	if err != nil {
		return err
	}
	plots := [][]*plot.Plot{{loss, acc, scale}}
	img := vgimg.New(15*vg.Inch, 4.5*vg.Inch)
	dc := draw.New(img)
	t := draw.Tiles{Rows: 1, Cols: 3, PadX: vg.Inch / 4, PadY: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align(plots, t, dc)
	for i, p := range plots[0] {
		p.Draw(canvases[0][i])
	}
	return writePNG(path, img)
}

func perEpoch(title, ylabel string, runs []Run, get func(Run) []float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "epoch"
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	for i, r := range runs {
		v := get(r)
		pts := make(plotter.XYs, len(v))
		for e, y := range v {
			pts[e] = plotter.XY{X: float64(e + 1), Y: y}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			continue
		}
		line.Color = colors[i%len(colors)]
		points.Color = colors[i%len(colors)]
		p.Add(line, points)
		p.Legend.Add(r.Name, line, points)
	}
	return p
}

func scalePlot(r Run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Loss scale (" + r.Name + ")"
	p.X.Label.Text = "step"
	p.Y.Label.Text = "scale"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	if len(r.Scale) == 0 {
		p.Title.Text += ": none (fp32)"
		return p, nil
	}
	pts := make(plotter.XYs, len(r.Scale))
	lo, hi := r.Scale[0], r.Scale[0]
	for i, s := range r.Scale {
		pts[i] = plotter.XY{X: float64(r.ScaleSteps[i]), Y: s}
		lo, hi = min(lo, s), max(hi, s)
	}
	// A power of two either side, so a constant scale still gets ticks.
	p.Y.Min, p.Y.Max = lo/4, hi*4
	line, err := plotter.NewLine(pts)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	line.Color = colors[0]
	p.Add(line)
	p.Legend.Add("scale", line)
	if len(r.Skipped) > 0 {
		skip := make(plotter.XYs, len(r.Skipped))
		for i, s := range r.Skipped {
			skip[i] = plotter.XY{X: float64(s), Y: nearest(r, s)}
		}
		sc, err := plotter.NewScatter(skip)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		sc.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}
		sc.Shape = draw.CrossGlyph{}
		sc.Radius = vg.Points(4)
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("skipped step (%d)", len(r.Skipped)), sc)
	}
	p.Legend.Top = true
	return p, nil
}

// nearest is the sampled scale at or just after step s.
func nearest(r Run, s int) float64 {
	for i, st := range r.ScaleSteps {
		if st >= s {
			return r.Scale[i]
		}
	}
	return r.Scale[len(r.Scale)-1]
}
