package nn_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// TestNarrowSlabs: the gradient of a var read through many Narrows (joined
// as slabs, slabs.go) is the sum of each slice's gradient put in place:
// slices tiling an axis, with gaps, one range twice, overlapping ranges,
// and slices along two axes; for a RequiresGrad input and for a var made
// inside the graph (settled when its node's turn comes), in fp32 and fp16.
func TestNarrowSlabs(t *testing.T) {
	d := devtest.Open(t)
	type cut struct{ axis, start, length int }
	cases := map[string][]cut{
		"tiling axis 0":   {{0, 0, 1}, {0, 1, 2}, {0, 3, 1}},
		"gaps":            {{1, 1, 2}, {1, 4, 1}},
		"one range twice": {{0, 1, 2}, {0, 1, 2}, {0, 0, 1}},
		"overlapping":     {{1, 0, 3}, {1, 2, 3}},
		"two axes":        {{0, 0, 2}, {1, 3, 2}, {0, 2, 2}},
	}
	const rows, cols = 4, 5
	for name, cuts := range cases {
		for _, dt := range []tensor.DType{f32, f16} {
			for _, inner := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/inner %v", name, dt, inner), func(t *testing.T) {
					g := nn.NewGraph(d, nn.Options{})
					defer g.Release()
					x := g.RequiresGrad(tensor.Cast(tInput(t, d, make([]float32, rows*cols), rows, cols), dt))
					src := x
					if inner {
						src = g.Scale(x, 2) // a var of the graph: its gradient is settled before Scale's rule reads it
					}
					want := make([]float32, rows*cols)
					var loss *nn.Var
					for k, c := range cuts {
						part := g.Narrow(src, c.axis, c.start, c.length)
						shape := part.Shape()
						w := make([]float32, shape[0]*shape[1])
						for i := range w {
							w[i] = float32(k + 1 + i%3) // small integers: every sum is exact
						}
						l := g.Sum(g.Mul(part, g.Input(tensor.Cast(tInput(t, d, w, shape...), dt))))
						if loss == nil {
							loss = l
						} else {
							loss = g.Add(loss, l)
						}
						for i := range shape[0] {
							for j := range shape[1] {
								r, c2 := i, j
								if c.axis == 0 {
									r += c.start
								} else {
									c2 += c.start
								}
								want[r*cols+c2] += w[i*shape[1]+j]
							}
						}
					}
					if err := g.Backward(loss, nil); err != nil {
						t.Fatal(err)
					}
					if inner {
						for i := range want {
							want[i] *= 2
						}
					}
					if got := tRead(t, x.Grad()); !slices.Equal(got, want) {
						t.Errorf("gradient %v, want %v", got, want)
					}
				})
			}
		}
	}
}
