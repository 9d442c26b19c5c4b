package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// axCases are reductions over sets of axes: one axis, several (adjacent
// or not), negative, every axis (explicitly and by nil), axes of length 1.
var axCases = []struct {
	shape []int
	axes  []int
}{
	{[]int{2, 3, 4}, []int{1}},
	{[]int{2, 3, 4}, []int{0, 2}},
	{[]int{2, 3, 4}, []int{-1, 0}},
	{[]int{2, 3, 4}, []int{0, 1}},
	{[]int{2, 3, 4}, nil},
	{[]int{2, 3, 4}, []int{2, 1, 0}},
	{[]int{4, 1, 5}, []int{1}},
	{[]int{4, 1, 5}, []int{0, 1}},
	{[]int{33, 7, 5, 3}, []int{0, 2}},
	{[]int{3, 700}, []int{-1}},
	{[]int{5000}, []int{0}},
}

// axOps are the reductions with their references: the result and the
// scale of its error.
var axOps = []struct {
	name string
	dev  func(x *tensor.Tensor, axes []int, keepdim bool) *tensor.Tensor
	init float64
	f    func(acc, v float64) float64
	mean bool
}{
	{"SumAxes", tensor.SumAxes, 0, func(a, v float64) float64 { return a + v }, false},
	{"MeanAxes", tensor.MeanAxes, 0, func(a, v float64) float64 { return a + v }, true},
	{"MaxAxes", tensor.MaxAxes, math.Inf(-1), ref.NaNMax, false},
	{"MinAxes", tensor.MinAxes, math.Inf(1), ref.NaNMin, false},
}

func TestReduceAxes(t *testing.T) {
	d := devtest.Open(t)
	t.Run("Random", func(t *testing.T) { axRandom(t, d) })
	t.Run("Specials", func(t *testing.T) { axSpecials(t, d) })
	t.Run("SumTo", func(t *testing.T) { axSumTo(t, d) })
	t.Run("Panics", func(t *testing.T) { axPanics(t, d) })
}

// axShape is the result shape of reducing shape over red.
func axShape(shape []int, red []bool, keepdim bool) []int {
	var s []int
	for i, n := range shape {
		switch {
		case !red[i]:
			s = append(s, n)
		case keepdim:
			s = append(s, 1)
		}
	}
	if len(s) == 0 {
		s = []int{1}
	}
	return s
}

func axFlags(rank int, axes []int) []bool {
	red := make([]bool, rank)
	for _, a := range axes {
		red[(a+rank)%rank] = true
	}
	if len(axes) == 0 {
		for i := range red {
			red[i] = true
		}
	}
	return red
}

func axRandom(t *testing.T, d *vk.Device) {
	var checks []opCheck
	for ci, c := range axCases {
		for _, dt := range opDTypes {
			x, xv := opRand(t, d, uint64(ci), 1, dt, c.shape...)
			red := axFlags(len(c.shape), c.axes)
			abs, k := ref.ReduceAxes(xv, c.shape, red, 0, func(a, v float64) float64 { return a + math.Abs(v) })
			for oi, op := range axOps {
				want, _ := ref.ReduceAxes(xv, c.shape, red, op.init, op.f)
				scale := abs
				if op.mean {
					scale = make([]float64, len(abs))
					for i := range want {
						want[i] /= float64(k)
						scale[i] = abs[i] / float64(k)
					}
				}
				if !op.mean && oi >= 2 {
					scale = nil // max and min are exact
				}
				keep := (ci+oi)%2 == 0
				what := fmt.Sprintf("%s(%s%v, %v, keepdim %v)", op.name, dt, c.shape, c.axes, keep)
				checks = append(checks, opWant(t, what, op.dev(x, c.axes, keep), tensor.Float32, axShape(c.shape, red, keep),
					axRound(want), scale, ref.Tol(tensor.Float32, k)))
			}
		}
	}
	opRun(checks)
}

// axSpecials: NaN wins max and min, infinities pass, -0 and 0 tie.
func axSpecials(t *testing.T, d *vk.Device) {
	n := len(opSpecials)
	x, _ := opInput(t, d, append(append([]float32{}, opSpecials...), opSpecials[1:]...), tensor.Float32, 2*n-1)
	var checks []opCheck
	// Two rows of the specials but NaN.
	y, yv := opInput(t, d, append(append([]float32{}, opSpecials[1:]...), opSpecials[1:]...), tensor.Float32, 2, n-1)
	for _, op := range axOps[2:] {
		want, _ := ref.ReduceAxes(yv, []int{2, n - 1}, []bool{false, true}, op.init, op.f)
		checks = append(checks, opWant(t, op.name+" specials", op.dev(y, []int{1}, false), tensor.Float32, []int{2}, want, nil, 0))
		checks = append(checks, opWant(t, op.name+" NaN", op.dev(x, nil, false), tensor.Float32, []int{1}, []float64{math.NaN()}, nil, 0))
	}
	opRun(checks)
}

// axRound rounds the float64 results to fp32, as the device stores them.
func axRound(v []float64) []float64 {
	for i := range v {
		v[i] = ref.Round(v[i], tensor.Float32)
	}
	return v
}

func axSumTo(t *testing.T, d *vk.Device) {
	var checks []opCheck
	shape := []int{2, 3, 4}
	for i, to := range [][]int{{3, 1}, {4}, {1}, {2, 1, 4}, {2, 3, 4}, {1, 1, 1}} {
		x, xv := opRand(t, d, uint64(i), 1, tensor.BFloat16, shape...)
		red := make([]bool, 3)
		for j := range red {
			jj := j - (3 - len(to))
			red[j] = jj < 0 || (to[jj] == 1 && shape[j] != 1)
		}
		want, k := ref.ReduceAxes(xv, shape, red, 0, func(a, v float64) float64 { return a + v })
		abs, _ := ref.ReduceAxes(xv, shape, red, 0, func(a, v float64) float64 { return a + math.Abs(v) })
		checks = append(checks, opWant(t, fmt.Sprintf("SumTo(%v, %v)", shape, to), tensor.SumTo(x, to...), tensor.Float32, to,
			want, abs, ref.Tol(tensor.Float32, k)))
	}
	opRun(checks)
}

func axPanics(t *testing.T, d *vk.Device) {
	x, _ := opRand(t, d, 1, 1, tensor.Float32, 2, 3)
	ints := bcInts(t, d, []int32{1, 2}, 2)
	for _, op := range axOps {
		opPanics[*tensor.UsageError](t, op.name+" axis 2", func() { op.dev(x, []int{2}, false) }, op.name, "axis 2", "[2 3]")
		opPanics[*tensor.UsageError](t, op.name+" axis -3", func() { op.dev(x, []int{-3}, true) }, op.name, "axis -3")
		opPanics[*tensor.UsageError](t, op.name+" twice", func() { op.dev(x, []int{1, -1}, true) }, op.name, "twice")
		opPanics[*tensor.DTypeError](t, op.name+" int32", func() { op.dev(ints, nil, true) }, op.name, "int32")
	}
	opPanics[*tensor.ShapeError](t, "SumTo", func() { tensor.SumTo(x, 2) }, "SumTo", "[2 3]", "[2]")
	opPanics[*tensor.ShapeError](t, "SumTo longer", func() { tensor.SumTo(x, 1, 2, 3) }, "SumTo", "[1 2 3]")
}
