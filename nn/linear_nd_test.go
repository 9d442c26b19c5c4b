package nn_test

import (
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
)

// TestLinearLeadingDims: Linear of x [2, 3, 4] is PyTorch's, x's leading
// dimensions as rows: the same output and the same gradients, bit for bit,
// as the [6, 4] product; it once ran forward and panicked in backward.
func TestLinearLeadingDims(t *testing.T) {
	d := devtest.Open(t)
	w := tParam(t, d, "w", tRand(20, 1, 1, f32), 5, 4)
	b := tParam(t, d, "b", tRand(5, 2, 1, f32), 5)
	xs := tRand(24, 3, 1, f32)
	run := func(shape ...int) (out, gw, gb, gx []float32, outShape []int) {
		t.Helper()
		for _, p := range []*nn.Param{w, b} {
			if err := p.ZeroGrad(); err != nil {
				t.Fatal(err)
			}
		}
		g := nn.NewGraph(d, nn.Options{})
		defer g.Release()
		x := g.RequiresGrad(tInput(t, d, xs, shape...))
		y := g.Linear(x, g.Param(w), g.Param(b))
		if err := g.Sum(g.Mul(y, y)).Backward(); err != nil {
			t.Fatal(err)
		}
		return tRead(t, y.Value()), tRead(t, w.Grad), tRead(t, b.Grad), tRead(t, x.Grad()), y.Shape()
	}
	o2, w2, b2, x2, _ := run(6, 4)
	o3, w3, b3, x3, s3 := run(2, 3, 4)
	if !slices.Equal(s3, []int{2, 3, 5}) {
		t.Errorf("output shape %v, want [2 3 5]", s3)
	}
	tSameBits(t, "output", o3, o2)
	tSameBits(t, "weight gradient", w3, w2)
	tSameBits(t, "bias gradient", b3, b2)
	tSameBits(t, "input gradient", x3, x2)
}
