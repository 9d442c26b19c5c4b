package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// poolCases: PyTorch's MaxPool2d(2) of the MNIST example (on rows of whole
// blocks of 8 too, as its 24x24: lavapipe's two-by-two texel forms),
// overlapping windows, padding, rectangular kernels, odd sizes and strides.
var poolCases = []ref.Pool{
	{Planes: 6, H: 6, W: 6, KH: 2, KW: 2, SH: 2, SW: 2},
	{Planes: 6, H: 8, W: 16, KH: 2, KW: 2, SH: 2, SW: 2},
	{Planes: 3, H: 4, W: 24, KH: 2, KW: 2, SH: 2, SW: 2},
	{Planes: 3, H: 7, W: 5, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{Planes: 2, H: 9, W: 8, KH: 3, KW: 2, SH: 2, SW: 1, PH: 1, PW: 0},
	{Planes: 1, H: 5, W: 5, KH: 5, KW: 5, SH: 1, SW: 1},
	{Planes: 2, H: 11, W: 10, KH: 4, KW: 3, SH: 3, SW: 3, PH: 1, PW: 1}, // strides that are no power of two
	{Planes: 3, H: 8, W: 7, KH: 2, KW: 1, SH: 3, SW: 2, PH: 1, PW: 0},   // gaps between windows: pixels in none
}

var adaptiveCases = []ref.Pool{
	{Planes: 4, H: 7, W: 7, Ho: 1, Wo: 1, Adaptive: true},
	{Planes: 3, H: 7, W: 5, Ho: 3, Wo: 2, Adaptive: true},
	{Planes: 2, H: 3, W: 4, Ho: 5, Wo: 7, Adaptive: true}, // upsampling: windows overlap
	{Planes: 2, H: 10, W: 9, Ho: 4, Wo: 4, Adaptive: true},
}

func TestPool2d(t *testing.T) {
	d := devtest.Open(t)
	var checks []opCheck
	for ci, c := range append(append([]ref.Pool{}, poolCases...), adaptiveCases...) {
		ho, wo := c.Out()
		xs, ys := []int{c.Planes / 2, 2, c.H, c.W}, []int{c.Planes / 2, 2, ho, wo}
		if c.Planes%2 == 1 {
			xs, ys = []int{c.Planes, c.H, c.W}, []int{c.Planes, ho, wo}
		}
		k, s, p := [2]int{c.KH, c.KW}, [2]int{c.SH, c.SW}, [2]int{c.PH, c.PW}
		for _, dt := range opDTypes {
			what := fmt.Sprintf("case %d %s", ci, dt)
			x, xv := opRand(t, d, uint64(ci), 4, dt, xs...)
			dy, dyv := opRand(t, d, uint64(ci)+50, 1, dt, ys...)
			if c.Adaptive {
				checks = append(checks,
					opWant(t, what+" AdaptiveAvgPool2d", tensor.AdaptiveAvgPool2d(x, ho, wo), dt, ys, c.Avg(xv), c.Avg(poolAbs(xv)), ref.Tol(dt, c.H*c.W)),
					opWant(t, what+" AdaptiveAvgPool2dBackward", tensor.AdaptiveAvgPool2dBackward(dy, xs), dt, xs, c.AvgBackward(dyv), c.AvgBackward(poolAbs(dyv)), ref.Tol(dt, ho*wo)))
				continue
			}
			y, arg := tensor.MaxPool2d(x, k, s, p)
			want, wantArg := c.Max(xv)
			t.Cleanup(arg.Release)
			checks = append(checks, opWant(t, what+" MaxPool2d", y, dt, ys, want, nil, 0), func() {
				got, err := arg.Int32s()
				if err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if got[i] != wantArg[i] {
						t.Errorf("%s argmax[%d] = %d, want %d", what, i, got[i], wantArg[i])
						return
					}
				}
			})
			checks = append(checks,
				opWant(t, what+" MaxPool2dBackward", tensor.MaxPool2dBackward(dy, arg, xs, k, s, p), dt, xs, c.MaxBackward(dyv, wantArg), c.MaxBackward(poolAbs(dyv), wantArg), ref.Tol(dt, 9)),
				opWant(t, what+" AvgPool2d", tensor.AvgPool2d(x, k, s, p), dt, ys, c.Avg(xv), c.Avg(poolAbs(xv)), ref.Tol(dt, c.KH*c.KW)),
				opWant(t, what+" AvgPool2dBackward", tensor.AvgPool2dBackward(dy, xs, k, s, p), dt, xs, c.AvgBackward(dyv), c.AvgBackward(poolAbs(dyv)), ref.Tol(dt, 9)))
		}
	}
	opRun(checks)
}

// TestMaxPool2dSpecials: NaN is a window's maximum, -inf windows pick their
// first element, ties the first in row-major order.
func TestMaxPool2dSpecials(t *testing.T) {
	d := devtest.Open(t)
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	x, _ := opInput(t, d, []float32{1, nan, 2, 2, inf, inf, 3, 3, 1, 1, 5, 5, inf, inf, 5, 5}, tensor.Float32, 1, 4, 4)
	y, arg := tensor.MaxPool2d(x, [2]int{2, 2}, [2]int{}, [2]int{})
	defer y.Release()
	defer arg.Release()
	got, a := opRead(t, y), []int32(nil)
	a, err := arg.Int32s()
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(got[0])) || got[1] != 3 || got[2] != 1 || got[3] != 5 {
		t.Errorf("MaxPool2d = %v", got)
	}
	if want := []int32{1, 6, 8, 10}; fmt.Sprint(a) != fmt.Sprint(want) {
		t.Errorf("argmax = %v, want %v", a, want)
	}
}

func TestPool2dMisuse(t *testing.T) {
	d := devtest.Open(t)
	x, _ := opRand(t, d, 1, 1, tensor.Float32, 2, 3, 4, 4)
	opPanics[*tensor.ShapeError](t, "kernel too large", func() { tensor.MaxPool2d(x, [2]int{5, 5}, [2]int{}, [2]int{}) }, "MaxPool2d", "[2 3 4 4]", "larger")
	opPanics[*tensor.UsageError](t, "padding", func() { tensor.AvgPool2d(x, [2]int{2, 2}, [2]int{}, [2]int{2, 0}) }, "AvgPool2d", "padding")
	opPanics[*tensor.UsageError](t, "adaptive size", func() { tensor.AdaptiveAvgPool2d(x, 0, 1) }, "AdaptiveAvgPool2d")
	dy, _ := opRand(t, d, 2, 1, tensor.Float32, 2, 3, 3, 2)
	opPanics[*tensor.ShapeError](t, "dy", func() { tensor.AvgPool2dBackward(dy, []int{2, 3, 4, 4}, [2]int{2, 2}, [2]int{}, [2]int{}) }, "AvgPool2dBackward", "[2 3 3 2]", "[2 3 2 2]")
	_, arg := tensor.MaxPool2d(x, [2]int{2, 2}, [2]int{}, [2]int{})
	defer arg.Release()
	opPanics[*tensor.DTypeError](t, "argmax dtype", func() { tensor.MaxPool2dBackward(dy, dy, []int{2, 3, 4, 4}, [2]int{2, 1}, [2]int{1, 2}, [2]int{}) }, "MaxPool2dBackward", "int32")
}

// poolAbs returns |v|: through a linear reference it gives the scale of
// each result's rounding error, which cancellation would hide.
func poolAbs(v []float32) []float32 {
	a := make([]float32, len(v))
	for i, x := range v {
		a[i] = float32(math.Abs(float64(x)))
	}
	return a
}

// TestPool2dLongLoops: on a CPU driver the general kernels run on a few
// workgroups, so a 16x16 window's invocations would loop past lavapipe's
// limit (tensor.ErrLoopLimit) over this input; their grid grows instead,
// and every window is summed whole.
func TestPool2dLongLoops(t *testing.T) {
	d := devtest.Open(t)
	const side, k = 528, 16
	out := side - k + 1
	x := tensor.Full(d, tensor.Float32, 1, 1, 1, side, side)
	defer x.Release()
	dy := tensor.Full(d, tensor.Float32, 1, 1, 1, out, out)
	defer dy.Release()
	y := tensor.AvgPool2d(x, [2]int{k, k}, [2]int{1, 1}, [2]int{})
	defer y.Release()
	dx := tensor.AvgPool2dBackward(dy, x.Shape(), [2]int{k, k}, [2]int{1, 1}, [2]int{})
	defer dx.Release()
	for i, v := range opRead(t, y) {
		if v != 1 {
			t.Fatalf("AvgPool2d element %d = %v, want 1", i, v)
		}
	}
	windows := func(i int) int { return min(i, out-1) - max(0, i-k+1) + 1 } // windows holding row (column) i
	for i, v := range opRead(t, dx) {
		if want := float32(windows(i/side)*windows(i%side)) / (k * k); v != want {
			t.Fatalf("AvgPool2dBackward element %d = %v, want %v", i, v, want)
		}
	}
}
