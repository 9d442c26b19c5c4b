// Package report draws the figure of a training run: the training loss of
// the steps read (pale, with its moving average) beside the epochs' means,
// the test accuracy per epoch, and the loss scale over steps on a log axis
// labelled in powers of two, its changes and the skipped steps marked;
// with a second run (fp32) beside the first for comparison. Legends sit
// under the plots, never on the data.
package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Run is the history of one training run.
type Run struct {
	Name     string    `json:"name"` // as shown in legends, e.g. "fp16 AMP"
	Loss     []float64 `json:"loss"` // each epoch's mean training loss
	Accuracy []float64 `json:"accuracy"`
	// LossSteps and StepLoss are the steps whose loss was read and that
	// loss; StepsPerEpoch places them on the epoch axis.
	LossSteps     []int     `json:"loss_steps,omitempty"`
	StepLoss      []float64 `json:"step_loss,omitempty"`
	StepsPerEpoch int       `json:"steps_per_epoch,omitempty"`
	// ScaleSteps and Scale sample the loss scale at some steps.
	ScaleSteps []int     `json:"scale_steps,omitempty"`
	Scale      []float64 `json:"scale,omitempty"`
	Skipped    []int     `json:"skipped,omitempty"` // steps skipped for an inf
}

// Write draws the runs into a PNG at path, atomically.
func Write(path string, runs ...Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("report: nothing to draw")
	}
	loss, lossLeg, err := epochLossPlot(runs)
	if err != nil {
		return err
	}
	acc, accLeg := perEpoch("Test accuracy", "accuracy", runs, func(r Run) []float64 { return r.Accuracy })
	scale, scaleLeg, err := scalePlot(runs[0])
	if err != nil {
		return err
	}
	panels := []struct {
		p   *plot.Plot
		leg []legendEntry
	}{{loss, lossLeg}, {acc, accLeg}, {scale, scaleLeg}}
	const w, h = 16 * vg.Inch, 5.5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	lines := 0
	for _, pn := range panels {
		lines = max(lines, len(pn.leg))
	}
	legendH := vg.Length(lines+1) * 14 * vg.Length(1) // ~14pt a line
	third := w / 3
	for i, pn := range panels {
		col := draw.Crop(dc, vg.Length(i)*third+vg.Inch/8, -(vg.Length(2-i)*third + vg.Inch/8), 0, 0)
		pn.p.Draw(draw.Crop(col, 0, 0, legendH, -vg.Inch/8))
		drawLegend(draw.Crop(col, vg.Inch/2, 0, 0, -(h-legendH)), pn.leg)
	}
	return writePNG(path, img)
}

// epochLossPlot draws each run's read step losses (pale), their moving
// average (dark) and the epochs' mean losses (points), on an epoch axis.
func epochLossPlot(runs []Run) (*plot.Plot, []legendEntry, error) {
	p, leg := perEpoch("Training loss", "cross-entropy (nats)", runs, func(r Run) []float64 { return r.Loss })
	for i, r := range runs {
		if len(r.StepLoss) == 0 || r.StepsPerEpoch < 1 {
			continue
		}
		if len(r.LossSteps) != len(r.StepLoss) {
			return nil, nil, fmt.Errorf("report: run %q: loss steps and losses differ in length", r.Name)
		}
		xs := make([]float64, len(r.LossSteps))
		for j, s := range r.LossSteps {
			xs[j] = float64(s) / float64(r.StepsPerEpoch)
		}
		lr, ls, span, err := rawAndSmooth(xs, r.StepLoss, runColors[i%len(runColors)])
		if err != nil {
			return nil, nil, err
		}
		p.Add(lr, ls)
		leg = append(leg, legendEntry{fmt.Sprintf("%s: loss of the steps read (%d)", r.Name, len(r.StepLoss)), []plot.Thumbnailer{lr}},
			legendEntry{fmt.Sprintf("%s: their moving average (%d reads)", r.Name, span), []plot.Thumbnailer{ls}})
	}
	return p, leg, nil
}

// perEpoch draws get(r) of each run at the end of each epoch.
func perEpoch(title, ylabel string, runs []Run, get func(Run) []float64) (*plot.Plot, []legendEntry) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "epoch"
	p.Y.Label.Text = ylabel
	p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks{}, niceTicks{}
	p.Add(plotter.NewGrid())
	var leg []legendEntry
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
		c := runColors[i%len(runColors)]
		line.Color, points.Color, points.Shape = c, c, draw.CircleGlyph{}
		p.Add(line, points)
		text := r.Name + ": per epoch"
		if n := len(v); n > 0 {
			text = fmt.Sprintf("%s: per epoch (last %.4g)", r.Name, v[n-1])
		}
		leg = append(leg, legendEntry{text, []plot.Thumbnailer{line, points}})
	}
	return p, leg
}

// scalePlot draws the loss scale of r over its steps on a log axis
// labelled in powers of two, marking where it changed and the skipped
// steps; its legend says how often it changed, or that it never did.
func scalePlot(r Run) (*plot.Plot, []legendEntry, error) {
	p := plot.New()
	p.Title.Text = "Loss scale (" + r.Name + ")"
	p.X.Label.Text = "step"
	p.Y.Label.Text = "scale"
	p.X.Tick.Marker = niceTicks{}
	if len(r.Scale) == 0 {
		p.Title.Text = "Loss scale: none (" + r.Name + " has no loss scaling)"
		p.HideAxes()
		p.X.Label.Text, p.Y.Label.Text = "", ""
		return p, nil, nil
	}
	if len(r.Scale) != len(r.ScaleSteps) {
		return nil, nil, fmt.Errorf("report: run %q: scale steps and scales differ in length", r.Name)
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = pow2Ticks{}
	pts := make(plotter.XYs, len(r.Scale))
	var changes plotter.XYs
	lo, hi := r.Scale[0], r.Scale[0]
	for i, s := range r.Scale {
		if !(s > 0) || math.IsInf(s, 0) {
			return nil, nil, fmt.Errorf("report: run %q: scale %g at step %d is not positive and finite", r.Name, s, r.ScaleSteps[i])
		}
		pts[i] = plotter.XY{X: float64(r.ScaleSteps[i]), Y: s}
		if i > 0 && s != r.Scale[i-1] {
			changes = append(changes, pts[i])
		}
		lo, hi = min(lo, s), max(hi, s)
	}
	// A power of two either side, so a constant scale still gets labels.
	p.Y.Min, p.Y.Max = lo/2, hi*2
	line, err := plotter.NewLine(pts)
	if err != nil {
		return nil, nil, fmt.Errorf("report: %w", err)
	}
	line.Color, line.StepStyle = runColors[0], plotter.PostStep
	p.Add(plotter.NewGrid(), line)
	last := r.Scale[len(r.Scale)-1]
	var leg []legendEntry
	if len(changes) == 0 {
		leg = append(leg, legendEntry{fmt.Sprintf("loss scale: 2^%g throughout, it never changed in %d steps", math.Log2(last), r.ScaleSteps[len(r.ScaleSteps)-1]),
			[]plot.Thumbnailer{line}})
	} else {
		ch, err := plotter.NewScatter(changes)
		if err != nil {
			return nil, nil, fmt.Errorf("report: %w", err)
		}
		ch.Color, ch.Shape, ch.Radius = runColors[0], draw.CircleGlyph{}, vg.Points(3)
		p.Add(ch)
		leg = append(leg, legendEntry{fmt.Sprintf("loss scale (final 2^%g)", math.Log2(last)), []plot.Thumbnailer{line}},
			legendEntry{fmt.Sprintf("a change of the scale (%d)", len(changes)), []plot.Thumbnailer{ch}})
	}
	if len(r.Skipped) > 0 {
		skip := make(plotter.XYs, len(r.Skipped))
		for i, s := range r.Skipped {
			skip[i] = plotter.XY{X: float64(s), Y: nearest(r, s)}
		}
		sc, err := plotter.NewScatter(skip)
		if err != nil {
			return nil, nil, fmt.Errorf("report: %w", err)
		}
		sc.Color, sc.Shape, sc.Radius = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}, draw.CrossGlyph{}, vg.Points(4)
		p.Add(sc)
		leg = append(leg, legendEntry{fmt.Sprintf("skipped step: inf/NaN gradient (%d)", len(r.Skipped)), []plot.Thumbnailer{sc}})
	}
	return p, leg, nil
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
