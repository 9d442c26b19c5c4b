package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Curve is the per-iteration history of a run evaluated now and then, as
// a language model's: the training loss of every iteration, the mean
// losses of each evaluation, and the loss scale of each iteration.
type Curve struct {
	Name string    `json:"name"` // as shown in legends, e.g. "fp16 AMP"
	Iter []int     `json:"iter"` // iterations whose loss was read
	Loss []float64 `json:"loss"` // their training loss (of one batch)
	// EvalIter are the iterations evaluated, EvalTrain and EvalVal the mean
	// losses of the training and validation splits there.
	EvalIter  []int     `json:"eval_iter,omitempty"`
	EvalTrain []float64 `json:"eval_train,omitempty"`
	EvalVal   []float64 `json:"eval_val,omitempty"`
	// ScaleIter and Scale sample the loss scale used by some iterations;
	// none for fp32.
	ScaleIter []int     `json:"scale_iter,omitempty"`
	Scale     []float64 `json:"scale,omitempty"`
	Skipped   []int     `json:"skipped,omitempty"` // iterations skipped for an inf or NaN gradient
}

// runColors are the dark colours of the runs; raw curves use a pale tint.
var runColors = []color.RGBA{{R: 0x1f, G: 0x77, B: 0xb4, A: 255}, {R: 0xff, G: 0x7f, B: 0x0e, A: 255}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 255}}

func pale(c color.RGBA) color.RGBA {
	return color.RGBA{R: uint8(155 + int(c.R)*100/255), G: uint8(155 + int(c.G)*100/255), B: uint8(155 + int(c.B)*100/255), A: 255}
}

// WriteCurves draws the runs into a PNG at path, atomically: on the left
// the training loss of every iteration (pale) with its moving average
// (dark) and the evaluations' validation losses (points); on the right the
// loss scale of the first run that has one, on a log axis labelled in
// powers of two, with skipped iterations marked. Legends sit under the
// plots, never on the data.
func WriteCurves(path string, runs ...Curve) error {
	if len(runs) == 0 {
		return fmt.Errorf("report: nothing to draw")
	}
	loss, lossLeg, err := lossPlot(runs)
	if err != nil {
		return err
	}
	scaled := runs[0]
	for _, r := range runs {
		if len(r.Scale) > 0 {
			scaled = r
			break
		}
	}
	scale, scaleLeg, err := scale2Plot(scaled)
	if err != nil {
		return err
	}
	const w, h = 14 * vg.Inch, 5.5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	legendH := vg.Length(max(len(lossLeg), len(scaleLeg))+1) * 14 * vg.Length(1) // ~14pt a line
	half := w / 2
	for i, pl := range []struct {
		p   *plot.Plot
		leg []legendEntry
	}{{loss, lossLeg}, {scale, scaleLeg}} {
		col := draw.Crop(dc, vg.Length(i)*half+vg.Inch/8, -(vg.Length(1-i)*half + vg.Inch/8), 0, 0)
		pl.p.Draw(draw.Crop(col, 0, 0, legendH, -vg.Inch/8))
		drawLegend(draw.Crop(col, vg.Inch/2, 0, 0, -(h-legendH)), pl.leg)
	}
	return writePNG(path, img)
}

// legendEntry is a legend line drawn under a plot.
type legendEntry struct {
	text   string
	thumbs []plot.Thumbnailer
}

func drawLegend(c draw.Canvas, es []legendEntry) {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	for _, e := range es {
		l.Add(e.text, e.thumbs...)
	}
	l.Draw(c)
}

func writePNG(path string, img *vgimg.Canvas) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".report-*.png")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, werr := vgimg.PngCanvas{Canvas: img}.WriteTo(tmp)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: write %s: %v %v", path, werr, cerr)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Smooth returns the exponential moving average of v over about span
// points, bias-corrected at the start (as TensorBoard's smoothing): the
// first points are not pulled towards 0.
func Smooth(v []float64, span int) []float64 {
	out := make([]float64, len(v))
	beta := 1 - 2/float64(max(span, 1)+1)
	avg, weight := 0.0, 0.0
	for i, x := range v {
		avg = beta*avg + (1-beta)*x
		weight = beta*weight + (1 - beta)
		out[i] = avg / weight
	}
	return out
}

// rawAndSmooth returns the line of ys over xs, pale, and of its moving
// average over smoothSpan points, dark in c, and that span.
func rawAndSmooth(xs, ys []float64, c color.RGBA) (raw, smooth *plotter.Line, span int, err error) {
	span = smoothSpan(len(ys))
	sm := Smooth(ys, span)
	rp, sp := make(plotter.XYs, len(ys)), make(plotter.XYs, len(ys))
	for j := range ys {
		rp[j], sp[j] = plotter.XY{X: xs[j], Y: ys[j]}, plotter.XY{X: xs[j], Y: sm[j]}
	}
	if raw, err = plotter.NewLine(rp); err != nil {
		return nil, nil, 0, fmt.Errorf("report: %w", err)
	}
	if smooth, err = plotter.NewLine(sp); err != nil {
		return nil, nil, 0, fmt.Errorf("report: %w", err)
	}
	raw.Color, raw.Width = pale(c), vg.Points(0.75)
	smooth.Color, smooth.Width = c, vg.Points(1.5)
	return raw, smooth, span, nil
}

// smoothSpan is the moving average's span for n points: a 25th of the
// run, at least 5.
func smoothSpan(n int) int { return max(5, n/25) }

func lossPlot(runs []Curve) (*plot.Plot, []legendEntry, error) {
	p := plot.New()
	p.Title.Text = "Loss"
	p.X.Label.Text = "iteration"
	p.Y.Label.Text = "cross-entropy (nats)"
	p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks{}, niceTicks{}
	var leg []legendEntry
	span := 0
	for i, r := range runs {
		c := runColors[i%len(runColors)]
		if len(r.Iter) != len(r.Loss) || len(r.EvalIter) != len(r.EvalVal) || len(r.EvalIter) != len(r.EvalTrain) {
			return nil, nil, fmt.Errorf("report: run %q: iterations and losses differ in length", r.Name)
		}
		if len(r.Loss) > 0 {
			xs := make([]float64, len(r.Iter))
			for j, it := range r.Iter {
				xs[j] = float64(it)
			}
			var lr, ls *plotter.Line
			var err error
			lr, ls, span, err = rawAndSmooth(xs, r.Loss, c)
			if err != nil {
				return nil, nil, err
			}
			p.Add(lr, ls)
			leg = append(leg, legendEntry{r.Name + ": training loss, each iteration", []plot.Thumbnailer{lr}},
				legendEntry{fmt.Sprintf("%s: training loss, moving average (%d iterations)", r.Name, span), []plot.Thumbnailer{ls}})
		}
		if len(r.EvalIter) > 0 {
			val := make(plotter.XYs, len(r.EvalIter))
			for j := range r.EvalIter {
				val[j] = plotter.XY{X: float64(r.EvalIter[j]), Y: r.EvalVal[j]}
			}
			line, pts, err := plotter.NewLinePoints(val)
			if err != nil {
				return nil, nil, fmt.Errorf("report: %w", err)
			}
			line.Color, line.Dashes = c, []vg.Length{vg.Points(4), vg.Points(2)}
			pts.Color, pts.Shape, pts.Radius = c, draw.CircleGlyph{}, vg.Points(3)
			p.Add(line, pts)
			last := len(r.EvalVal) - 1
			leg = append(leg, legendEntry{fmt.Sprintf("%s: validation loss (final %.4f at iteration %d)", r.Name, r.EvalVal[last], r.EvalIter[last]),
				[]plot.Thumbnailer{line, pts}})
		}
	}
	p.Add(plotter.NewGrid())
	return p, leg, nil
}

// niceTicks labels five to ten round values (1, 2, 2.5 or 5 times a power
// of ten apart), with minor ticks between, all with as many decimals as
// the step needs: gonum's default gives a loss falling from 4.2 to 1.8
// two labels.
type niceTicks struct{}

// Ticks returns the ticks between lo and hi.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 8
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * p
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*p >= raw {
			step = m * p
			break
		}
	}
	dec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	if math.Abs(step/math.Pow(10, -float64(dec))-2.5) < 1e-9 {
		dec++
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step*2) * step / 2; v <= hi+1e-9*step; v += step / 2 {
		t := plot.Tick{Value: v}
		if k := math.Round(v / step * 2); math.Mod(k, 2) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', dec, 64)
		}
		ts = append(ts, t)
	}
	return ts
}

// pow2Ticks labels the powers of two of a log axis 2^k, every step-th
// when there are many.
type pow2Ticks struct{}

// Ticks returns the ticks between min and max.
func (pow2Ticks) Ticks(lo, hi float64) []plot.Tick {
	a, b := int(math.Floor(math.Log2(lo))), int(math.Ceil(math.Log2(hi)))
	step := max(1, (b-a+7)/8)
	var ts []plot.Tick
	for k := a; k <= b; k++ {
		t := plot.Tick{Value: math.Ldexp(1, k)}
		if k%step == 0 {
			t.Label = fmt.Sprintf("2^%d", k)
		}
		ts = append(ts, t)
	}
	return ts
}

func scale2Plot(r Curve) (*plot.Plot, []legendEntry, error) {
	p := plot.New()
	p.Title.Text = "Loss scale (" + r.Name + ")"
	p.X.Label.Text = "iteration"
	p.Y.Label.Text = "scale"
	p.X.Tick.Marker = niceTicks{}
	if len(r.Scale) == 0 {
		p.Title.Text = "Loss scale: none (an fp32 run has no loss scaling)"
		p.HideAxes() // no empty axes from -1 to 1
		p.X.Label.Text, p.Y.Label.Text = "", ""
		return p, nil, nil
	}
	if len(r.Scale) != len(r.ScaleIter) {
		return nil, nil, fmt.Errorf("report: run %q: scale iterations and scales differ in length", r.Name)
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = pow2Ticks{}
	pts := make(plotter.XYs, len(r.Scale))
	lo, hi := r.Scale[0], r.Scale[0]
	for i, s := range r.Scale {
		if !(s > 0) || math.IsInf(s, 0) {
			return nil, nil, fmt.Errorf("report: run %q: scale %g at iteration %d is not positive and finite", r.Name, s, r.ScaleIter[i])
		}
		pts[i] = plotter.XY{X: float64(r.ScaleIter[i]), Y: s}
		lo, hi = min(lo, s), max(hi, s)
	}
	// A power of two either side, so a constant scale still gets ticks.
	p.Y.Min, p.Y.Max = lo/2, hi*2
	line, err := plotter.NewLine(pts)
	if err != nil {
		return nil, nil, fmt.Errorf("report: %w", err)
	}
	line.Color, line.StepStyle = runColors[0], plotter.PostStep
	p.Add(plotter.NewGrid(), line)
	leg := []legendEntry{{fmt.Sprintf("loss scale (final 2^%g)", math.Log2(r.Scale[len(r.Scale)-1])), []plot.Thumbnailer{line}}}
	skip := make(plotter.XYs, 0, len(r.Skipped))
	for _, s := range r.Skipped {
		skip = append(skip, plotter.XY{X: float64(s), Y: scaleAt(r, s)})
	}
	sc, err := plotter.NewScatter(skip)
	if err != nil {
		return nil, nil, fmt.Errorf("report: %w", err)
	}
	sc.Color, sc.Shape, sc.Radius = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}, draw.CrossGlyph{}, vg.Points(4)
	p.Add(sc)
	leg = append(leg, legendEntry{fmt.Sprintf("skipped iteration: inf/NaN gradient (%d)", len(r.Skipped)), []plot.Thumbnailer{sc}})
	return p, leg, nil
}

// scaleAt is the scale sampled at iteration s, or the last one before it.
func scaleAt(r Curve, s int) float64 {
	v := r.Scale[0]
	for i, it := range r.ScaleIter {
		if it > s {
			break
		}
		v = r.Scale[i]
	}
	return v
}
