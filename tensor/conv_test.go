package tensor_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// convCases cover stride, padding, dilation, groups (depthwise included),
// a 1x1 kernel, rectangular kernels and odd sizes (16-bit words that
// straddle rows and samples).
var convCases = []ref.Conv{
	{N: 2, Cin: 3, H: 7, W: 6, Cout: 4, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 3, Cin: 2, H: 8, W: 9, Cout: 3, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 1, Cin: 2, H: 9, W: 8, Cout: 5, KH: 3, KW: 2, SH: 1, SW: 2, PH: 1, PW: 2, DH: 2, DW: 1, Groups: 1},
	{N: 2, Cin: 4, H: 5, W: 5, Cout: 6, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 2},
	{N: 2, Cin: 4, H: 6, W: 5, Cout: 8, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 4}, // depthwise, multiplier 2
	{N: 3, Cin: 3, H: 3, W: 5, Cout: 3, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 5, Cin: 1, H: 5, W: 5, Cout: 1, KH: 5, KW: 5, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}, // output 1x1
}

func convOpts(c ref.Conv) tensor.Conv2dOpts {
	return tensor.Conv2dOpts{Stride: [2]int{c.SH, c.SW}, Padding: [2]int{c.PH, c.PW}, Dilation: [2]int{c.DH, c.DW}, Groups: c.Groups}
}

// convRun checks forward (with and without bias) and both backwards of every
// case in every dtype.
func convRun(t *testing.T) {
	d := devtest.Open(t)
	var checks []opCheck
	for ci, c := range convCases {
		ho, wo := c.Out()
		xs, ws, ys := []int{c.N, c.Cin, c.H, c.W}, []int{c.Cout, c.Cin / c.Groups, c.KH, c.KW}, []int{c.N, c.Cout, ho, wo}
		k := c.Cin / c.Groups * c.KH * c.KW
		for _, dt := range opDTypes {
			what := fmt.Sprintf("case %d %s", ci, dt)
			x, xv := opRand(t, d, uint64(ci), 1, dt, xs...)
			w, wv := opRand(t, d, uint64(ci)+100, 1, dt, ws...)
			b, bv := opRand(t, d, uint64(ci)+200, 1, tensor.Float32, c.Cout)
			dy, dyv := opRand(t, d, uint64(ci)+300, 1, dt, ys...)

			want, scale := c.Forward(xv, wv, bv)
			checks = append(checks, opWant(t, what+" Conv2d", tensor.Conv2d(x, w, b, convOpts(c)), dt, ys, want, scale, ref.Tol(dt, k+1)))
			want, scale = c.Forward(xv, wv, nil)
			checks = append(checks, opWant(t, what+" Conv2d no bias", tensor.Conv2d(x, w, nil, convOpts(c)), dt, ys, want, scale, ref.Tol(dt, k)))

			dxw, dxs := c.BackwardInput(dyv, wv)
			checks = append(checks, opWant(t, what+" BackwardInput", tensor.Conv2dBackwardInput(dy, w, xs, convOpts(c)), dt, xs, dxw, dxs,
				ref.Tol(dt, c.Cout/c.Groups+c.KH*c.KW)))

			dww, dwws, dbw, dbws := c.BackwardWeight(dyv, xv)
			dw, db := tensor.Conv2dBackwardWeight(dy, x, ws, convOpts(c))
			checks = append(checks, opWant(t, what+" BackwardWeight dw", dw, dt, ws, dww, dwws, ref.Tol(dt, c.N*ho*wo)),
				opWant(t, what+" BackwardWeight db", db, dt, []int{c.Cout}, dbw, dbws, ref.Tol(dt, c.N*ho*wo)))
		}
	}
	opRun(checks)
}

func TestConv2d(t *testing.T) { convRun(t) }

// TestConv2dPasses splits every case into passes of two samples (the
// last of one), as a device with a small maxStorageBufferRange would: the
// results must not change.
func TestConv2dPasses(t *testing.T) {
	tensor.SetConvPassSamples(2)
	t.Cleanup(func() { tensor.SetConvPassSamples(0) })
	convRun(t)
}

// TestConv2dDeterministic: the gathers run in a fixed order, so two runs
// give the same bits.
func TestConv2dDeterministic(t *testing.T) {
	d := devtest.Open(t)
	c := convCases[1]
	ho, wo := c.Out()
	xs, ws := []int{c.N, c.Cin, c.H, c.W}, []int{c.Cout, c.Cin, c.KH, c.KW}
	w, _ := opRand(t, d, 1, 1, tensor.Float16, ws...)
	dy, _ := opRand(t, d, 2, 1, tensor.Float16, c.N, c.Cout, ho, wo)
	var runs [][]uint32
	for range 2 {
		dx := tensor.Conv2dBackwardInput(dy, w, xs, convOpts(c))
		runs = append(runs, opBits(opRead(t, dx)))
		dx.Release()
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Error("Conv2dBackwardInput: two runs differ")
	}
}

func TestConv2dMisuse(t *testing.T) {
	d := devtest.Open(t)
	x, _ := opRand(t, d, 1, 1, tensor.Float32, 2, 3, 5, 5)
	w, _ := opRand(t, d, 2, 1, tensor.Float32, 4, 3, 3, 3)
	w2, _ := opRand(t, d, 3, 1, tensor.Float32, 4, 2, 3, 3)
	big, _ := opRand(t, d, 4, 1, tensor.Float32, 4, 3, 7, 7)
	wh, _ := opRand(t, d, 5, 1, tensor.Float16, 4, 3, 3, 3)
	b, _ := opRand(t, d, 6, 1, tensor.Float32, 5)
	opPanics[*tensor.ShapeError](t, "channels", func() { tensor.Conv2d(x, w2, nil, tensor.Conv2dOpts{}) }, "Conv2d", "[2 3 5 5]", "[4 2 3 3]")
	opPanics[*tensor.ShapeError](t, "kernel too large", func() { tensor.Conv2d(x, big, nil, tensor.Conv2dOpts{}) }, "Conv2d", "[4 3 7 7]", "larger than the padded input")
	opPanics[*tensor.ShapeError](t, "groups", func() { tensor.Conv2d(x, w, nil, tensor.Conv2dOpts{Groups: 2}) }, "Conv2d", "divisible")
	opPanics[*tensor.ShapeError](t, "bias", func() { tensor.Conv2d(x, w, b, tensor.Conv2dOpts{}) }, "Conv2d", "[5]", "[4]")
	opPanics[*tensor.ShapeError](t, "rank", func() { tensor.Conv2d(b, w, nil, tensor.Conv2dOpts{}) }, "Conv2d", "[5]")
	opPanics[*tensor.DTypeError](t, "dtype", func() { tensor.Conv2d(x, wh, nil, tensor.Conv2dOpts{}) }, "Conv2d", "float16")
	opPanics[*tensor.UsageError](t, "stride", func() { tensor.Conv2d(x, w, nil, tensor.Conv2dOpts{Stride: [2]int{-1, 1}}) }, "Conv2d", "stride")
	dy, _ := opRand(t, d, 7, 1, tensor.Float32, 2, 4, 4, 3)
	opPanics[*tensor.ShapeError](t, "dy", func() { tensor.Conv2dBackwardInput(dy, w, []int{2, 3, 5, 5}, tensor.Conv2dOpts{}) }, "Conv2dBackwardInput", "[2 4 4 3]", "[2 4 3 3]")
	opPanics[*tensor.ShapeError](t, "dy weight", func() { tensor.Conv2dBackwardWeight(dy, x, []int{4, 3, 3, 3}, tensor.Conv2dOpts{}) }, "Conv2dBackwardWeight", "[2 4 4 3]")
}
