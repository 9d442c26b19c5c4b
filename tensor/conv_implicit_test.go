package tensor_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// convImplicitCases have a GEMM depth Cin/groups*kH*kW that is a multiple
// of 8, which the implicit GEMM needs: stride, padding, dilation,
// rectangular kernels, groups, a 1x1 kernel, and column counts that are
// not multiples of 8.
var convImplicitCases = []ref.Conv{
	{N: 2, Cin: 8, H: 7, W: 6, Cout: 4, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 3, Cin: 8, H: 8, W: 9, Cout: 5, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 1, Cin: 8, H: 9, W: 8, Cout: 5, KH: 3, KW: 2, SH: 1, SW: 2, PH: 1, PW: 2, DH: 2, DW: 1, Groups: 1},
	{N: 2, Cin: 16, H: 5, W: 5, Cout: 6, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 2},
	{N: 3, Cin: 8, H: 3, W: 5, Cout: 3, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
	// Output rows of 32: whole runs of a row per invocation (conv_tex's
	// texel path), with and without padding at the row ends.
	{N: 2, Cin: 8, H: 6, W: 34, Cout: 4, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 2, Cin: 8, H: 4, W: 32, Cout: 4, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 1, Cin: 8, H: 8, W: 16, Cout: 4, KH: 3, KW: 3, SH: 2, SW: 1, PH: 2, PW: 2, DH: 2, DW: 2, Groups: 1},
	{N: 2, Cin: 16, H: 3, W: 8, Cout: 6, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 2},
	// Output rows of 24: a whole row per invocation, with and without
	// padding, and (Cout 40) 32-row tiles in fp16 with rows past Cout.
	{N: 2, Cin: 8, H: 5, W: 26, Cout: 4, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 2, Cin: 8, H: 4, W: 24, Cout: 40, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	// Output rows of 26 and 6, not multiples of a texel: a whole row per
	// invocation still, its run starting anywhere in a texel (rows of 29
	// and a kernel 4 wide start runs at every offset with their last
	// element inside the row). Padding 2 is Conv2dBackwardInput's of the
	// MNIST example's conv2.
	{N: 2, Cin: 8, H: 4, W: 24, Cout: 40, KH: 3, KW: 3, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1, Groups: 1},
	{N: 2, Cin: 8, H: 3, W: 29, Cout: 4, KH: 1, KW: 4, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 3, Cin: 8, H: 3, W: 8, Cout: 5, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
}

// TestConv2dImplicit runs the forward of every case on the implicit GEMM
// where the device has it (lavapipe), whatever the problem's size, against
// the float64 reference.
func TestConv2dImplicit(t *testing.T) {
	d := devtest.Open(t)
	tensor.SetConvImplicit(1)
	t.Cleanup(func() { tensor.SetConvImplicit(0) })
	var checks []opCheck
	for ci, c := range convImplicitCases {
		ho, wo := c.Out()
		xs, ws, ys := []int{c.N, c.Cin, c.H, c.W}, []int{c.Cout, c.Cin / c.Groups, c.KH, c.KW}, []int{c.N, c.Cout, ho, wo}
		k := c.Cin / c.Groups * c.KH * c.KW
		for _, dt := range opDTypes {
			what := fmt.Sprintf("case %d %s", ci, dt)
			x, xv := opRand(t, d, uint64(ci), 1, dt, xs...)
			w, wv := opRand(t, d, uint64(ci)+100, 1, dt, ws...)
			b, bv := opRand(t, d, uint64(ci)+200, 1, tensor.Float32, c.Cout)
			if dt != tensor.BFloat16 && ci == 0 {
				t.Logf("%s: implicit GEMM %v", what, tensor.ConvImplicit(x, w, convOpts(c)))
			}
			want, scale := c.Forward(xv, wv, bv)
			checks = append(checks, opWant(t, what+" Conv2d", tensor.Conv2d(x, w, b, convOpts(c)), dt, ys, want, scale, ref.Tol(dt, k+1)))
			want, scale = c.Forward(xv, wv, nil)
			checks = append(checks, opWant(t, what+" Conv2d no bias", tensor.Conv2d(x, w, nil, convOpts(c)), dt, ys, want, scale, ref.Tol(dt, k)))
		}
	}
	opRun(checks)
}

// TestConv2dImplicitBits: where the rule gives MatMul the texel kernel, the
// implicit GEMM accumulates in its order and must give im2col + MatMul's
// bits, in fp32 and fp16, in one pass and in several.
func TestConv2dImplicitBits(t *testing.T) {
	d := devtest.Open(t)
	for _, c := range []ref.Conv{
		{N: 4, Cin: 16, H: 12, W: 12, Cout: 64, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
		{N: 2, Cin: 16, H: 18, W: 18, Cout: 64, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},               // rows of 16, no padding
		{N: 2, Cin: 16, H: 16, W: 16, Cout: 64, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}, // rows of 16, padding
		{N: 2, Cin: 16, H: 26, W: 26, Cout: 64, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},               // rows of 24
		{N: 2, Cin: 16, H: 24, W: 24, Cout: 32, KH: 3, KW: 3, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1, Groups: 1}, // rows of 26
	} {
		convImplicitBits(t, d, c)
	}
}

func convImplicitBits(t *testing.T, d *vk.Device, c ref.Conv) {
	xs, ws := []int{c.N, c.Cin, c.H, c.W}, []int{c.Cout, c.Cin, c.KH, c.KW}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float16} {
		x, _ := opRand(t, d, 1, 1, dt, xs...)
		w, _ := opRand(t, d, 2, 1, dt, ws...)
		b, _ := opRand(t, d, 3, 1, tensor.Float32, c.Cout)
		if !tensor.ConvImplicit(x, w, convOpts(c)) {
			t.Skipf("%s: no implicit GEMM on this device", dt)
		}
		t.Logf("%v %s: stored NCHW by conv_tex %v", c, dt, tensor.ConvImplicitNCHW(x, w, convOpts(c)))
		run := func(mode int) []uint32 {
			tensor.SetConvImplicit(mode)
			defer tensor.SetConvImplicit(0)
			y := tensor.Conv2d(x, w, b, convOpts(c))
			defer y.Release()
			return opBits(opRead(t, y))
		}
		want := run(-1)
		if got := run(0); !slices.Equal(got, want) {
			t.Errorf("%v %s: implicit GEMM and im2col + MatMul differ", c, dt)
		}
		tensor.SetConvPassSamples(3)
		got := run(0)
		tensor.SetConvPassSamples(0)
		if !slices.Equal(got, want) {
			t.Errorf("%v %s: implicit GEMM in passes of 3 samples and im2col + MatMul differ", c, dt)
		}
	}
}
