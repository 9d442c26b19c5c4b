package report_test

import (
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkamp/vkamp/tools/internal/report"
)

// fakeCurve is a run whose loss falls from 4.2 towards 1.8 with noise,
// evaluated every 50 iterations, its scale halving at skipped iterations.
func fakeCurve(name string, fp16 bool, seed uint64) report.Curve {
	rng := rand.New(rand.NewPCG(seed, 1))
	c := report.Curve{Name: name}
	scale := 65536.0
	for it := range 400 {
		c.Iter = append(c.Iter, it)
		c.Loss = append(c.Loss, 1.8+2.4*math.Exp(-float64(it)/60)+0.15*rng.NormFloat64())
		if fp16 {
			c.ScaleIter = append(c.ScaleIter, it)
			c.Scale = append(c.Scale, scale)
			if it == 3 || it == 4 || it == 250 {
				c.Skipped = append(c.Skipped, it)
				scale /= 2
			}
		}
		if it%50 == 0 || it == 399 {
			l := 1.8 + 2.4*math.Exp(-float64(it)/60)
			c.EvalIter, c.EvalTrain, c.EvalVal = append(c.EvalIter, it), append(c.EvalTrain, l), append(c.EvalVal, l+0.05)
		}
	}
	return c
}

func TestWriteCurves(t *testing.T) {
	dir := t.TempDir()
	if p := os.Getenv("REPORT_PNG_DIR"); p != "" { // to look at the figure
		dir = p
	}
	path := filepath.Join(dir, "curves.png")
	if err := report.WriteCurves(path, fakeCurve("fp16 AMP", true, 1), fakeCurve("fp32", false, 2)); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 300 {
		t.Errorf("image %v too small", b)
	}
	if err := report.WriteCurves(filepath.Join(dir, "fp32.png"), fakeCurve("fp32", false, 2)); err != nil {
		t.Errorf("fp32 alone: %v", err)
	}
	bad := fakeCurve("bad", true, 3)
	bad.Loss = bad.Loss[1:]
	if err := report.WriteCurves(filepath.Join(dir, "bad.png"), bad); err == nil {
		t.Error("mismatched lengths drew")
	}
	if err := report.WriteCurves(path); err == nil {
		t.Error("no runs drew")
	}
}

func TestSmooth(t *testing.T) {
	// Span 3 is beta 0.5: the last point weighs 0.5, the ones before it
	// 0.25, 0.125, 0.0625, divided by their sum 0.9375.
	s := report.Smooth([]float64{4, 4, 4, 2}, 3)
	want := (4*(0.0625+0.125+0.25) + 2*0.5) / 0.9375
	if s[0] != 4 || s[1] != 4 || s[2] != 4 || math.Abs(s[3]-want) > 1e-12 {
		t.Errorf("smooth = %v, want [4 4 4 %g]", s, want)
	}
}
